package io.dlock.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.dlock.Lease;
import io.dlock.LockClient;
import io.dlock.LockMetricNames;
import io.dlock.LockOptions;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.observation.DefaultMeterObservationHandler;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationHandler;
import io.micrometer.observation.ObservationRegistry;
import io.micrometer.observation.tck.TestObservationRegistry;
import io.micrometer.observation.tck.TestObservationRegistryAssert;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** Each acquire as a Micrometer observation ({@link LockOptions.Builder#observationRegistry(Object)}). */
class ObservationTest {
    private final TestObservationRegistry registry = TestObservationRegistry.create();
    private final InMemoryBackend.Server server = new InMemoryBackend.Server();
    private final List<LockClient> clients = new ArrayList<>();
    /** Every observation the registry saw stop, in order. */
    private final List<Observation.Context> stoppedContexts = new CopyOnWriteArrayList<>();

    {
        registry.observationConfig().observationHandler(new ObservationHandler<Observation.Context>() {
            @Override
            public boolean supportsContext(Observation.Context context) {
                return true;
            }

            @Override
            public void onStop(Observation.Context context) {
                stoppedContexts.add(context);
            }
        });
    }

    @AfterEach
    void tearDown() {
        clients.forEach(LockClient::close);
    }

    private LockClient open(LockOptions.Builder options) {
        LockClient c = LockEngine.newClient(server.connect(), options.build());
        clients.add(c);
        return c;
    }

    private LockClient open() {
        return open(LockOptions.builder().observationRegistry(registry));
    }

    private List<Observation.Context> stopped() {
        return stoppedContexts.stream()
                .filter(c -> LockMetricNames.ACQUIRE.equals(c.getName()))
                .toList();
    }

    private static String low(Observation.Context c, String key) {
        var kv = c.getLowCardinalityKeyValue(key);
        return kv == null ? null : kv.getValue();
    }

    @Test
    void acquire_grantedAndTimedOut_observedWithBackendKindAndOutcome() throws Exception {
        LockClient c = open();
        LockClient other = open();
        Lease lease = c.lock("x").acquire();
        assertThat(other.lock("x").tryAcquire(Duration.ofMillis(30))).isEmpty();
        // Stopped as the outcome completes, which may be just after the caller woke up.
        await().atMost(Duration.ofSeconds(5)).until(() -> stopped().size() == 2);
        lease.close();

        List<Observation.Context> all = stopped();
        assertThat(all).allSatisfy(o -> {
            assertThat(low(o, LockMetricNames.TAG_BACKEND)).isEqualTo("inmemory");
            assertThat(low(o, LockMetricNames.TAG_KIND)).isEqualTo("lock");
            assertThat(o.getHighCardinalityKeyValue(LockMetricNames.TAG_LOCK))
                    .as("no lock name unless asked")
                    .isNull();
            assertThat(o.getLowCardinalityKeyValue(LockMetricNames.TAG_LOCK)).isNull();
        });
        assertThat(all)
                .extracting(o -> low(o, LockMetricNames.TAG_OUTCOME))
                .containsExactlyInAnyOrder("acquired", "timeout");
        Observation.Context granted = all.stream()
                .filter(o -> "acquired".equals(low(o, LockMetricNames.TAG_OUTCOME)))
                .findFirst()
                .orElseThrow();
        Observation.Context timedOut = all.stream()
                .filter(o -> "timeout".equals(low(o, LockMetricNames.TAG_OUTCOME)))
                .findFirst()
                .orElseThrow();
        assertThat(granted.getError()).isNull();
        assertThat(timedOut.getError())
                .as("someone else holding the lock is an answer, not an error (no error tag)")
                .isNull();
        TestObservationRegistryAssert.assertThat(registry)
                .hasNumberOfObservationsWithNameEqualTo(LockMetricNames.ACQUIRE, 2)
                .forAllObservationsWithNameEqualTo(
                        LockMetricNames.ACQUIRE, o -> o.hasLowCardinalityKeyValue(LockMetricNames.TAG_KIND, "lock"));
    }

    @Test
    void acquire_insideAnObservation_isItsChild() throws Exception {
        LockClient c = open();
        Observation parent = Observation.start("checkout", registry);
        try (Observation.Scope scope = parent.openScope()) {
            c.lock("x").acquire().close();
        } finally {
            parent.stop();
        }
        await().atMost(Duration.ofSeconds(5)).until(() -> stopped().size() == 1);
        assertThat(stopped().get(0).getParentObservation()).isSameAs(parent);
    }

    @Test
    void observationsPerLockName_addsTheNameAsHighCardinalityOnly() throws Exception {
        LockClient c = open(LockOptions.builder().observationRegistry(registry).observationsPerLockName(true));
        c.lock("orders").acquire().close();
        await().atMost(Duration.ofSeconds(5)).until(() -> stopped().size() == 1);
        Observation.Context o = stopped().get(0);
        assertThat(o.getHighCardinalityKeyValue(LockMetricNames.TAG_LOCK).getValue())
                .isEqualTo("orders");
        assertThat(o.getLowCardinalityKeyValue(LockMetricNames.TAG_LOCK)).isNull();
    }

    @Test
    void withAMeterRegistry_acquireTimerComesFromTheObservationOnly_otherMetersStay() throws Exception {
        MeterRegistry meters = new SimpleMeterRegistry();
        ObservationRegistry observations = ObservationRegistry.create();
        observations.observationConfig().observationHandler(new DefaultMeterObservationHandler(meters));
        LockClient c = open(LockOptions.builder().metricsRegistry(meters).observationRegistry(observations));
        c.lock("x").acquire().close();

        await().atMost(Duration.ofSeconds(5))
                .until(() -> meters.find(LockMetricNames.ACQUIRE).timers().stream()
                                .mapToLong(Timer::count)
                                .sum()
                        == 1);
        List<Timer> timers = List.copyOf(meters.find(LockMetricNames.ACQUIRE).timers());
        assertThat(timers).as("one timer, made by the observation handler").hasSize(1);
        Timer t = timers.get(0);
        assertThat(t.getId().getTag(LockMetricNames.TAG_OUTCOME)).isEqualTo("acquired");
        assertThat(t.getId().getTag(LockMetricNames.TAG_BACKEND)).isEqualTo("inmemory");
        assertThat(t.getId().getTag(LockMetricNames.TAG_KIND)).isEqualTo("lock");
        assertThat(meters.find(LockMetricNames.HELD).gauges()).hasSize(1);
    }

    @Test
    void registryWithoutHandlers_observesNothing_acquireWorks() throws Exception {
        LockClient c = open(LockOptions.builder().observationRegistry(ObservationRegistry.create()));
        try (Lease lease = c.lock("x").acquire()) {
            assertThat(lease.isValid()).isTrue();
        }
        TestObservationRegistryAssert.assertThat(registry).doesNotHaveAnyObservation();
    }

    @Test
    void observationRegistry_notAnObservationRegistry_refusedAndTheBackendClosed() {
        InMemoryBackend backend = server.connect();
        LockOptions options =
                LockOptions.builder().observationRegistry("not a registry").build();
        assertThatThrownBy(() -> LockEngine.newClient(backend, options))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("ObservationRegistry")
                .hasMessageContaining("java.lang.String");
        assertThat(backend.isClosed()).isTrue();
    }
}
