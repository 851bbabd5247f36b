package io.dlock.core;

import static io.dlock.LockMetricNames.ACQUIRE;
import static io.dlock.LockMetricNames.HELD;
import static io.dlock.LockMetricNames.LEADER;
import static io.dlock.LockMetricNames.LEADER_TERM;
import static io.dlock.LockMetricNames.LEADER_TERMS;
import static io.dlock.LockMetricNames.LEASE_LOST;
import static io.dlock.LockMetricNames.LOCAL_HANDOFF;
import static io.dlock.LockMetricNames.RENEWAL;
import static io.dlock.LockMetricNames.TAG_BACKEND;
import static io.dlock.LockMetricNames.TAG_CAUSE;
import static io.dlock.LockMetricNames.TAG_ELECTION;
import static io.dlock.LockMetricNames.TAG_EVENT;
import static io.dlock.LockMetricNames.TAG_KIND;
import static io.dlock.LockMetricNames.TAG_LOCK;
import static io.dlock.LockMetricNames.TAG_OUTCOME;
import static io.dlock.LockMetricNames.WAITING;

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
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.jspecify.annotations.Nullable;

/**
 * The Micrometer binding of {@link LockMetrics}. Without per-lock-name tags every meter is created
 * once, when the client connects, so recording costs no registry lookup and builds no tags; with
 * them, each record looks its meter up by name (the price of the extra tag). With an observation
 * registry as well, acquisitions go to {@link ObservationLockMetrics} instead of the timer here,
 * whose handlers then record {@code dlock.acquire}.
 *
 * <p>Concurrency: meters are thread-safe; the arrays are filled before the client is used.
 */
// Meters sit in arrays indexed by the enums' ordinals: one array read per call, not a map lookup.
@SuppressWarnings("EnumOrdinal")
final class MicrometerLockMetrics implements LockMetrics {
    private static final AtomicInteger CLIENTS = new AtomicInteger();

    private final MeterRegistry registry;
    private final boolean perLockName;
    private final Tags base;
    /** {@link #base} and this client's number: gauges of two clients in one registry stay apart. */
    private final Tags clientTags;
    /** [kind][outcome]; null with per-lock-name tags or with observations. */
    private final Timer @Nullable [][] timers;
    /** Observations of acquisitions, or {@link LockMetrics#NONE} for the timer here. */
    private final LockMetrics observing;

    private final Counter @Nullable [] lost;
    private final @Nullable Counter renewedOk;
    private final @Nullable Counter renewalFailed;
    private final @Nullable Counter handOffs;
    private final List<Meter> gauges = new ArrayList<>();
    /** Each started candidate's {@code dlock.leader} gauge, until it closes. */
    private final java.util.IdentityHashMap<EngineLeaderElection, Meter> electionGauges =
            new java.util.IdentityHashMap<>();

    private MicrometerLockMetrics(
            MeterRegistry registry, boolean perLockName, EngineClient client, LockMetrics observing) {
        this.registry = registry;
        this.perLockName = perLockName;
        this.observing = observing;
        this.base = Tags.of(TAG_BACKEND, client.backendName);
        clientTags = base.and("client", Integer.toString(CLIENTS.incrementAndGet()));
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
        if (observing == NONE) {
            timers = new Timer[LockMode.values().length][OUTCOME_COUNT];
            for (LockMode mode : LockMode.values()) {
                for (int o = 0; o < OUTCOME_COUNT; o++) {
                    timers[mode.ordinal()][o] = timer(base, mode, o);
                }
            }
        } else {
            timers = null;
        }
        lost = new Counter[LossCause.values().length];
        for (LossCause c : LossCause.values()) {
            lost[c.ordinal()] = lostCounter(base, c);
        }
        renewedOk = renewalCounter(base, true);
        renewalFailed = renewalCounter(base, false);
        handOffs = handOffCounter(base);
    }

    /**
     * Binds to {@code registry}, which must be a Micrometer {@code MeterRegistry}; acquisitions go
     * to {@code observing} unless it is {@link LockMetrics#NONE}.
     */
    static LockMetrics bind(Object registry, boolean perLockName, EngineClient client, LockMetrics observing) {
        if (!(registry instanceof MeterRegistry r)) {
            throw new IllegalArgumentException("metricsRegistry must be an io.micrometer.core.instrument.MeterRegistry,"
                    + " not " + registry.getClass().getName());
        }
        return new MicrometerLockMetrics(r, perLockName, client, observing);
    }

    @Override
    public boolean timesAcquisitions() {
        return true;
    }

    @Override
    public @Nullable Object acquireStarted(Acquisition a) {
        return observing == NONE ? null : observing.acquireStarted(a);
    }

    @Override
    public void acquireEnded(Acquisition a, long nanos, @Nullable Throwable error, @Nullable Object started) {
        if (observing != NONE) {
            observing.acquireEnded(a, nanos, error, started);
            return;
        }
        int outcome = LockMetrics.outcomeOf(error);
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

    @Override
    public void electionStarted(EngineLeaderElection election) {
        Gauge gauge = Gauge.builder(LEADER, election, EngineLeaderElection::leadingGauge)
                .tags(clientTags)
                .tag(TAG_ELECTION, election.name())
                .description("1 while this client's candidate leads the election, else 0")
                .register(registry);
        synchronized (electionGauges) {
            electionGauges.put(election, gauge);
        }
    }

    @Override
    public void electionClosed(EngineLeaderElection election) {
        Meter gauge;
        synchronized (electionGauges) {
            gauge = electionGauges.remove(election);
        }
        if (gauge != null) {
            registry.remove(gauge);
        }
    }

    @Override
    public void termBegan(EngineLeaderElection election) {
        termCounter(election, "elected").increment();
    }

    @Override
    public void termEnded(EngineLeaderElection election, TermEnd how, long nanos) {
        termCounter(election, how.tag).increment();
        Timer.builder(LEADER_TERM)
                .tags(base)
                .tag(TAG_ELECTION, election.name())
                .description("how long this client's candidate led, per term")
                .register(registry)
                .record(nanos, TimeUnit.NANOSECONDS);
    }

    private Counter termCounter(EngineLeaderElection election, String event) {
        return Counter.builder(LEADER_TERMS)
                .tags(base)
                .tag(TAG_ELECTION, election.name())
                .tag(TAG_EVENT, event)
                .description("terms of this client's candidate: elected, and how each ended")
                .register(registry);
    }

    /** Removes this client's gauges, which would otherwise report a closed client. */
    @Override
    public void close() {
        gauges.forEach(registry::remove);
        synchronized (electionGauges) {
            electionGauges.values().forEach(registry::remove);
            electionGauges.clear();
        }
    }

    private Timer timer(Tags tags, LockMode mode, int outcome) {
        return Timer.builder(ACQUIRE)
                .tags(tags)
                .tag(TAG_KIND, LockMetrics.kindOf(mode))
                .tag(TAG_OUTCOME, LockMetrics.outcomeTag(outcome))
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
