package io.dlock.core;

import static io.dlock.LockMetricNames.ACQUIRE;
import static io.dlock.LockMetricNames.HELD;
import static io.dlock.LockMetricNames.LEASE_LOST;
import static io.dlock.LockMetricNames.LOCAL_HANDOFF;
import static io.dlock.LockMetricNames.RENEWAL;
import static io.dlock.LockMetricNames.TAG_BACKEND;
import static io.dlock.LockMetricNames.TAG_CAUSE;
import static io.dlock.LockMetricNames.TAG_KIND;
import static io.dlock.LockMetricNames.TAG_LOCK;
import static io.dlock.LockMetricNames.TAG_OUTCOME;
import static io.dlock.LockMetricNames.WAITING;

import io.dlock.LockTimeoutException;
import io.dlock.spi.LockMode;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.Timer;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CancellationException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.jspecify.annotations.Nullable;

/**
 * The Micrometer binding of {@link LockMetrics}. Without per-lock-name tags every meter is created
 * once, when the client connects, so recording costs no registry lookup; with them, each record
 * looks its meter up by name (the price of the extra tag).
 *
 * <p>Concurrency: meters are thread-safe; the arrays are filled before the client is used.
 */
// Meters sit in arrays indexed by the enums' ordinals: one array read per call, not a map lookup.
@SuppressWarnings("EnumOrdinal")
final class MicrometerLockMetrics implements LockMetrics {
    private static final AtomicInteger CLIENTS = new AtomicInteger();
    private static final String[] OUTCOMES = {"acquired", "timeout", "error", "cancelled"};

    private final MeterRegistry registry;
    private final boolean perLockName;
    private final Tags base;
    /** [kind][outcome]; null with per-lock-name tags. */
    private final Timer @Nullable [][] timers;

    private final Counter @Nullable [] lost;
    private final @Nullable Counter renewedOk;
    private final @Nullable Counter renewalFailed;
    private final @Nullable Counter handOffs;
    private final List<Meter> gauges = new ArrayList<>();

    private MicrometerLockMetrics(MeterRegistry registry, boolean perLockName, EngineClient client) {
        this.registry = registry;
        this.perLockName = perLockName;
        this.base = Tags.of(TAG_BACKEND, client.backendName);
        Tags clientTags = base.and("client", Integer.toString(CLIENTS.incrementAndGet()));
        gauges.add(Gauge.builder(HELD, client, EngineClient::heldCount)
                .tags(clientTags)
                .description("leases this client holds")
                .register(registry));
        gauges.add(Gauge.builder(WAITING, client, EngineClient::waitingCount)
                .tags(clientTags)
                .description("acquisitions of this client waiting")
                .register(registry));
        if (perLockName) {
            timers = null;
            lost = null;
            renewedOk = null;
            renewalFailed = null;
            handOffs = null;
            return;
        }
        timers = new Timer[LockMode.values().length][OUTCOMES.length];
        for (LockMode mode : LockMode.values()) {
            for (int o = 0; o < OUTCOMES.length; o++) {
                timers[mode.ordinal()][o] = timer(base, mode, o);
            }
        }
        lost = new Counter[LossCause.values().length];
        for (LossCause c : LossCause.values()) {
            lost[c.ordinal()] = lostCounter(base, c);
        }
        renewedOk = renewalCounter(base, true);
        renewalFailed = renewalCounter(base, false);
        handOffs = handOffCounter(base);
    }

    /** Binds to {@code registry}, which must be a Micrometer {@code MeterRegistry}. */
    static LockMetrics bind(Object registry, boolean perLockName, EngineClient client) {
        if (!(registry instanceof MeterRegistry r)) {
            throw new IllegalArgumentException("metricsRegistry must be an io.micrometer.core.instrument.MeterRegistry,"
                    + " not " + registry.getClass().getName());
        }
        return new MicrometerLockMetrics(r, perLockName, client);
    }

    @Override
    public boolean timesAcquisitions() {
        return true;
    }

    @Override
    public void acquireEnded(Acquisition a, long nanos, Throwable error) {
        int outcome = outcomeOf(error);
        Timer t = perLockName
                ? timer(base.and(TAG_LOCK, a.name), a.mode, outcome)
                : Objects.requireNonNull(timers)[a.mode.ordinal()][outcome];
        t.record(nanos, TimeUnit.NANOSECONDS);
    }

    @Override
    public void leaseLost(Acquisition a, LossCause cause) {
        (perLockName ? lostCounter(base.and(TAG_LOCK, a.name), cause) : Objects.requireNonNull(lost)[cause.ordinal()])
                .increment();
    }

    @Override
    public void renewal(Acquisition a, boolean ok) {
        (perLockName
                        ? renewalCounter(base.and(TAG_LOCK, a.name), ok)
                        : Objects.requireNonNull(ok ? renewedOk : renewalFailed))
                .increment();
    }

    @Override
    public void localHandOff(Acquisition a) {
        (perLockName ? handOffCounter(base.and(TAG_LOCK, a.name)) : Objects.requireNonNull(handOffs)).increment();
    }

    /** Removes this client's gauges, which would otherwise report a closed client. */
    @Override
    public void close() {
        gauges.forEach(registry::remove);
    }

    private static int outcomeOf(Throwable error) {
        if (error == null) {
            return 0;
        }
        Throwable e = Acquisition.unwrap(error);
        if (e instanceof LockTimeoutException) {
            return 1;
        }
        if (e instanceof CancellationException
                || (e instanceof IllegalStateException
                        && String.valueOf(e.getMessage()).contains("closed"))) {
            return 3;
        }
        return 2;
    }

    private static String kindOf(LockMode mode) {
        return switch (mode) {
            case EXCLUSIVE -> "lock";
            case READ -> "read";
            case WRITE -> "write";
            case SEMAPHORE -> "semaphore";
        };
    }

    private Timer timer(Tags tags, LockMode mode, int outcome) {
        return Timer.builder(ACQUIRE)
                .tags(tags)
                .tag(TAG_KIND, kindOf(mode))
                .tag(TAG_OUTCOME, OUTCOMES[outcome])
                .description("time from an acquire call to its outcome")
                .register(registry);
    }

    private Counter lostCounter(Tags tags, LossCause cause) {
        return Counter.builder(LEASE_LOST)
                .tags(tags)
                .tag(TAG_CAUSE, cause.tag)
                .description("leases lost, not released by their owner")
                .register(registry);
    }

    private Counter renewalCounter(Tags tags, boolean ok) {
        return Counter.builder(RENEWAL)
                .tags(tags)
                .tag(TAG_OUTCOME, ok ? "ok" : "failed")
                .description("lease renewals")
                .register(registry);
    }

    private Counter handOffCounter(Tags tags) {
        return Counter.builder(LOCAL_HANDOFF)
                .tags(tags)
                .description("grants passed to a waiter of the same client without a round trip")
                .register(registry);
    }
}
