package io.dlock.spring.boot;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.dlock.Lease;
import io.dlock.LockClient;
import io.dlock.LockMetricNames;
import io.dlock.spring.boot.actuate.DLockEndpoint;
import io.dlock.spring.boot.annotation.DistributedLock;
import io.dlock.spring.boot.annotation.OnTimeout;
import io.dlock.spring.boot.annotation.ScheduledLock;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.micrometer.observation.ObservationRegistry;
import io.micrometer.observation.tck.TestObservationRegistry;
import io.micrometer.observation.tck.TestObservationRegistryAssert;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

/** What the auto-configuration creates, when it backs off, and the startup errors of bad annotations. */
class AutoConfigurationIT {
    static Backend backend;

    @BeforeAll
    static void start() {
        backend = Backend.zookeeper();
    }

    @AfterAll
    static void stop() {
        backend.close();
    }

    private final ApplicationContextRunner runner =
            new ApplicationContextRunner().withConfiguration(StarterConfigs.ALL);

    public static class Job {
        @DistributedLock(key = "'job'")
        public String run() {
            return "ran";
        }
    }

    public static class BadSpel {
        @DistributedLock(key = "'order:' + #")
        public void run(long orderId) {}
    }

    public static class EmptyKey {
        @DistributedLock(key = " ")
        public void run() {}
    }

    public static class BadDuration {
        @DistributedLock(key = "'x'", waitTime = "five seconds")
        public void run() {}
    }

    public static class SkipOnPrimitive {
        @DistributedLock(key = "'x'", onTimeout = OnTimeout.SKIP)
        public int run() {
            return 1;
        }
    }

    public static class BadConstantName {
        @DistributedLock(key = "'has space'")
        public void run() {}
    }

    public static class AtLeastOverAtMost {
        @ScheduledLock(name = "job", lockAtMostFor = "1s", lockAtLeastFor = "2s")
        public void run() {}
    }

    /** Every message in the cause chain: Spring wraps the aspect's error in bean-creation exceptions. */
    private static String messages(Throwable t) {
        assertThat(t).as("startup failure").isNotNull();
        StringBuilder sb = new StringBuilder();
        for (Throwable c = t; c != null; c = c.getCause()) {
            sb.append(c.getMessage()).append('\n');
        }
        return sb.toString();
    }

    @Test
    void uri_set_clientConnectsAndAnnotationsUseIt_closedWithTheContext() {
        AtomicReference<LockClient> seen = new AtomicReference<>();
        runner.withPropertyValues("dlock.uri=" + backend.uri("auto-uri"))
                .withBean(Job.class)
                .run(ctx -> {
                    assertThat(ctx).hasSingleBean(LockClient.class);
                    assertThat(ctx).hasSingleBean(BootLine.HEALTH_INDICATOR);
                    LockClient client = ctx.getBean(LockClient.class);
                    seen.set(client);
                    assertThat(ctx.getBean(Job.class).run()).isEqualTo("ran");
                    try (Lease l = client.lock("job").tryAcquire(Duration.ZERO).orElseThrow()) {
                        assertThat(l.fencingToken()).isPositive();
                    }
                });
        assertThatThrownBy(() -> seen.get().lock("job")).isInstanceOf(IllegalStateException.class);
    }

    @Test
    void userClientBean_wins_andIsNotClosedTwice() throws Exception {
        try (LockClient mine = LockClient.connect(backend.uri("auto-mine"))) {
            // dlock.uri points at nothing: connecting to it would fail the context.
            runner.withPropertyValues(
                            "dlock.uri=zookeeper://127.0.0.1:1/none",
                            "dlock.connect-timeout=1s",
                            "dlock.session-timeout=1s")
                    .withBean("myClient", LockClient.class, () -> mine, bd -> bd.setDestroyMethodName(""))
                    .withBean(Job.class)
                    .run(ctx -> {
                        assertThat(ctx).hasNotFailed();
                        assertThat(ctx.getBean(LockClient.class)).isSameAs(mine);
                        assertThat(ctx.getBean(Job.class).run()).isEqualTo("ran");
                    });
            assertThat(mine.lock("job").tryAcquire(Duration.ZERO))
                    .isPresent()
                    .get()
                    .satisfies(Lease::close);
        }
    }

    @Test
    void noUri_noClient_contextStarts() {
        runner.run(ctx -> {
            assertThat(ctx).hasNotFailed();
            assertThat(ctx).doesNotHaveBean(LockClient.class);
            assertThat(ctx).doesNotHaveBean(BootLine.HEALTH_INDICATOR);
        });
    }

    @Test
    void annotatedMethod_noClient_failsStartup() {
        runner.withBean(Job.class).run(ctx -> assertThat(messages(ctx.getStartupFailure()))
                .contains("set dlock.uri or define a LockClient bean"));
    }

    @Test
    void unreachableBackend_eager_failsStartup() {
        runner.withPropertyValues(
                        "dlock.uri=zookeeper://127.0.0.1:1/none",
                        "dlock.connect=eager",
                        "dlock.connect-timeout=1s",
                        "dlock.session-timeout=1s")
                .run(ctx -> assertThat(ctx).hasFailed());
    }

    @Test
    void unreachableBackend_lazyByDefault_startsDown() {
        runner.withPropertyValues(
                        "dlock.uri=zookeeper://127.0.0.1:1/none",
                        "dlock.connect-timeout=1s",
                        "dlock.session-timeout=1s")
                .withBean(Job.class)
                .run(ctx -> {
                    assertThat(ctx).hasNotFailed();
                    var h = BootLine.healthNow(ctx);
                    assertThat(h.status()).isEqualTo(io.dlock.spring.boot.internal.HealthCheck.DOWN);
                    assertThat(h.details()).containsEntry("backend", "zookeeper");
                    assertThatThrownBy(() -> ctx.getBean(Job.class).run())
                            .isInstanceOf(io.dlock.LockBackendException.class);
                });
    }

    @Test
    void badUri_failsStartupNamingIt() {
        runner.withPropertyValues("dlock.uri=nosuch://127.0.0.1:1")
                .run(ctx -> assertThat(messages(ctx.getStartupFailure())).contains("nosuch"));
    }

    @Test
    void badAnnotations_failStartupNamingTheMethod() {
        ApplicationContextRunner r = runner.withPropertyValues("dlock.uri=" + backend.uri("auto-bad"));
        r.withBean(BadSpel.class).run(ctx -> assertThat(messages(ctx.getStartupFailure()))
                .contains("BadSpel.run")
                .contains("not a valid SpEL expression"));
        r.withBean(EmptyKey.class).run(ctx -> assertThat(messages(ctx.getStartupFailure()))
                .contains("EmptyKey.run")
                .contains("key is empty"));
        r.withBean(BadDuration.class).run(ctx -> assertThat(messages(ctx.getStartupFailure()))
                .contains("BadDuration.run")
                .contains("'five seconds' is not a duration"));
        r.withBean(SkipOnPrimitive.class).run(ctx -> assertThat(messages(ctx.getStartupFailure()))
                .contains("SkipOnPrimitive.run")
                .contains("SKIP"));
        r.withBean(BadConstantName.class).run(ctx -> assertThat(messages(ctx.getStartupFailure()))
                .contains("BadConstantName.run")
                .contains("' '"));
        r.withBean(AtLeastOverAtMost.class).run(ctx -> assertThat(messages(ctx.getStartupFailure()))
                .contains("AtLeastOverAtMost.run")
                .contains("exceeds lockAtMostFor"));
    }

    @Test
    void meterRegistryBean_isBoundToTheClient() {
        runner.withPropertyValues("dlock.uri=" + backend.uri("auto-metrics"))
                .withBean(MeterRegistry.class, SimpleMeterRegistry::new)
                .withBean(Job.class)
                .run(ctx -> {
                    ctx.getBean(Job.class).run();
                    MeterRegistry r = ctx.getBean(MeterRegistry.class);
                    assertThat(r.get(LockMetricNames.ACQUIRE)
                                    .tag(LockMetricNames.TAG_OUTCOME, "acquired")
                                    .timer()
                                    .count())
                            .isEqualTo(1);
                });
        runner.withPropertyValues("dlock.uri=" + backend.uri("auto-metrics"), "dlock.metrics.enabled=false")
                .withBean(MeterRegistry.class, SimpleMeterRegistry::new)
                .withBean(Job.class)
                .run(ctx -> {
                    ctx.getBean(Job.class).run();
                    assertThat(ctx.getBean(MeterRegistry.class)
                                    .find(LockMetricNames.ACQUIRE)
                                    .timers())
                            .isEmpty();
                });
    }

    @Test
    void observationRegistryBean_eachAcquireIsAnObservationEndedWithItsOutcome() {
        runner.withPropertyValues("dlock.uri=" + backend.uri("auto-observe"))
                .withBean(ObservationRegistry.class, TestObservationRegistry::create)
                .withBean(Job.class)
                .run(ctx -> {
                    assertThat(ctx.getBean(Job.class).run()).isEqualTo("ran");
                    TestObservationRegistry r = (TestObservationRegistry) ctx.getBean(ObservationRegistry.class);
                    // Stopped as the outcome completes, which may be just after the caller woke up.
                    await().atMost(Duration.ofSeconds(5))
                            .untilAsserted(() -> TestObservationRegistryAssert.assertThat(r)
                                    .hasObservationWithNameEqualTo(LockMetricNames.ACQUIRE)
                                    .that()
                                    .hasBeenStopped());
                    TestObservationRegistryAssert.assertThat(r)
                            .hasNumberOfObservationsWithNameEqualTo(LockMetricNames.ACQUIRE, 1)
                            .hasObservationWithNameEqualTo(LockMetricNames.ACQUIRE)
                            .that()
                            .hasBeenStarted()
                            .hasBeenStopped()
                            .hasLowCardinalityKeyValue(LockMetricNames.TAG_BACKEND, "zookeeper")
                            .hasLowCardinalityKeyValue(LockMetricNames.TAG_KIND, "lock")
                            .hasLowCardinalityKeyValue(LockMetricNames.TAG_OUTCOME, "acquired")
                            .doesNotHaveHighCardinalityKeyValueWithKey(LockMetricNames.TAG_LOCK)
                            .doesNotHaveError();
                });
        runner.withPropertyValues("dlock.uri=" + backend.uri("auto-observe"), "dlock.observations.per-lock-name=true")
                .withBean(ObservationRegistry.class, TestObservationRegistry::create)
                .withBean(Job.class)
                .run(ctx -> {
                    ctx.getBean(Job.class).run();
                    TestObservationRegistry r = (TestObservationRegistry) ctx.getBean(ObservationRegistry.class);
                    await().atMost(Duration.ofSeconds(5))
                            .untilAsserted(() -> TestObservationRegistryAssert.assertThat(r)
                                    .hasObservationWithNameEqualTo(LockMetricNames.ACQUIRE)
                                    .that()
                                    .hasBeenStopped());
                    TestObservationRegistryAssert.assertThat(r)
                            .hasObservationWithNameEqualTo(LockMetricNames.ACQUIRE)
                            .that()
                            .hasHighCardinalityKeyValue(LockMetricNames.TAG_LOCK, "job")
                            .doesNotHaveLowCardinalityKeyValueWithKey(LockMetricNames.TAG_LOCK);
                });
        runner.withPropertyValues("dlock.uri=" + backend.uri("auto-observe"), "dlock.observations.enabled=false")
                .withBean(ObservationRegistry.class, TestObservationRegistry::create)
                .withBean(Job.class)
                .run(ctx -> {
                    ctx.getBean(Job.class).run();
                    TestObservationRegistryAssert.assertThat(
                                    (TestObservationRegistry) ctx.getBean(ObservationRegistry.class))
                            .doesNotHaveAnyObservation();
                });
    }

    @Test
    void springBootMetricsAndObservations_oneAcquireTimerMadeByTheObservation() {
        runner.withConfiguration(BootLine.METRICS)
                .withPropertyValues("dlock.uri=" + backend.uri("auto-boot-observe"))
                .withBean(Job.class)
                .run(ctx -> {
                    ctx.getBean(Job.class).run();
                    MeterRegistry r = ctx.getBean(MeterRegistry.class);
                    await().atMost(Duration.ofSeconds(5))
                            .until(() -> r.find(LockMetricNames.ACQUIRE).timers().stream()
                                            .mapToLong(t -> t.count())
                                            .sum()
                                    == 1);
                    assertThat(r.find(LockMetricNames.ACQUIRE).timers())
                            .singleElement()
                            .satisfies(t -> {
                                assertThat(t.getId().getTag(LockMetricNames.TAG_OUTCOME))
                                        .isEqualTo("acquired");
                                assertThat(t.getId().getTag(LockMetricNames.TAG_BACKEND))
                                        .isEqualTo("zookeeper");
                                assertThat(t.getId().getTag("error"))
                                        .as("recorded by Spring Boot's meter observation handler")
                                        .isEqualTo("none");
                            });
                    assertThat(r.find(LockMetricNames.HELD).gauges()).hasSize(1);
                });
    }

    @Test
    void endpoint_availableWhenExposed() {
        runner.withConfiguration(AutoConfigurations.of(
                        org.springframework.boot.actuate.autoconfigure.endpoint.EndpointAutoConfiguration.class))
                .withPropertyValues(
                        "dlock.uri=" + backend.uri("auto-endpoint"), "management.endpoints.web.exposure.include=dlock")
                .run(ctx -> assertThat(ctx).hasSingleBean(DLockEndpoint.class));
        runner.withPropertyValues("dlock.uri=" + backend.uri("auto-endpoint"), "management.health.dlock.enabled=false")
                .run(ctx -> {
                    assertThat(ctx).doesNotHaveBean(DLockEndpoint.class);
                    assertThat(ctx).doesNotHaveBean(BootLine.HEALTH_INDICATOR);
                });
    }
}
