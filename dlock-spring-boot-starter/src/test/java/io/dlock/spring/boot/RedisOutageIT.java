package io.dlock.spring.boot;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.dlock.Lease;
import io.dlock.LockBackendException;
import io.dlock.LockClient;
import io.dlock.LockMetricNames;
import io.dlock.spring.boot.annotation.DistributedLock;
import io.dlock.spring.boot.annotation.ScheduledLock;
import io.dlock.spring.boot.annotation.ScheduledRunRecorder;
import io.dlock.spring.boot.autoconfigure.DLockAutoConfiguration;
import io.dlock.testkit.RedisServer;
import io.dlock.testkit.Timing;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tag;
import io.micrometer.core.instrument.Timer;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Collectors;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.scheduling.annotation.EnableScheduling;
import org.springframework.scheduling.annotation.Scheduled;
import org.springframework.scheduling.concurrent.ThreadPoolTaskScheduler;

/**
 * A bad day on a backend that was up: the application connected to a real Redis, then the server is
 * killed (SIGKILL) and later restarted on the same port. Unreachable is not busy: {@code
 * @DistributedLock} and {@code LockClient.withLock} fail with {@link LockBackendException} within
 * their wait plus one request timeout, without running the action, and a {@code @ScheduledLock} job
 * counts each run the outage stops as {@code outcome=error} (the observation's {@code error} tag
 * names the exception) with one WARN per run, then runs again once the server is back. A run
 * skipped because another client holds the lock is {@code outcome=skipped}, with no error anywhere.
 * With Spring Boot's metrics and observation auto-configurations, as an application with the
 * actuator has them; on Spring Boot 4 too ({@code dlock-spring-boot4-it}).
 */
class RedisOutageIT {
    /** The request timeout (Lettuce's command timeout is the connect timeout). */
    private static final Duration CONNECT_TIMEOUT = Duration.ofSeconds(2);
    /** What a failure may take beyond the wait and one request timeout on a loaded machine. */
    private static final Duration MARGIN = Timing.scale(Duration.ofSeconds(2));

    private static final String JOB = "tick";

    static RedisServer redis;

    @BeforeAll
    static void start() {
        redis = RedisServer.start();
    }

    @AfterAll
    static void stop() {
        redis.close();
    }

    /** A test that failed with the server down leaves it up for the next. */
    @AfterEach
    void serverUp() {
        if (!redis.isAlive()) {
            redis.restart();
        }
    }

    public static class Service {
        final AtomicInteger runs = new AtomicInteger();

        @DistributedLock(key = "'bad-day'", waitTime = "5s")
        public String work() {
            runs.incrementAndGet();
            return "ran";
        }

        /** Read through the proxy (its own fields are not the target's). */
        public int runs() {
            return runs.get();
        }
    }

    public static class Tick {
        final AtomicInteger runs = new AtomicInteger();

        @Scheduled(fixedDelay = 200)
        @ScheduledLock(name = JOB, lockAtMostFor = "5s")
        public void tick() {
            runs.incrementAndGet();
        }

        public int runs() {
            return runs.get();
        }
    }

    /** A {@code @ScheduledLock} job on a scheduler whose ErrorHandler keeps what reaches it. */
    @Configuration(proxyBeanMethods = false)
    @EnableScheduling
    static class Scheduling {
        final List<Throwable> errors = new CopyOnWriteArrayList<>();

        @Bean
        ThreadPoolTaskScheduler taskScheduler() {
            ThreadPoolTaskScheduler s = new ThreadPoolTaskScheduler();
            s.setErrorHandler(errors::add);
            return s;
        }

        @Bean
        Tick tick() {
            return new Tick();
        }
    }

    private static ApplicationContextRunner runner(String namespace) {
        redis.markFreshPrefix(namespace);
        return new ApplicationContextRunner()
                .withConfiguration(BootLine.METRICS)
                .withConfiguration(AutoConfigurations.of(DLockAutoConfiguration.class))
                .withPropertyValues(
                        "dlock.uri=" + redis.uri(namespace),
                        "dlock.lease-time=2s", // a data-loss fence after the restart lasts one lease
                        "dlock.connect-timeout=" + CONNECT_TIMEOUT.toSeconds() + "s",
                        "dlock.retry.base-sleep=100ms",
                        "dlock.retry.max-sleep=500ms");
    }

    @Test
    void distributedLockAndWithLock_serverKilledAfterConnecting_backendExceptionWithinWaitActionNotRun() {
        runner("outage-direct").withBean(Service.class).run(ctx -> {
            Service service = ctx.getBean(Service.class);
            LockClient client = ctx.getBean(LockClient.class);
            assertThat(service.work()).isEqualTo("ran");
            assertThat(client.withLock("bad-day-direct", Duration.ofSeconds(2), () -> "ran"))
                    .isEqualTo("ran");

            redis.kill();
            try {
                // Right after the kill (the client may not know yet) and again once it does.
                for (int round = 1; round <= 2; round++) {
                    long t0 = System.nanoTime();
                    assertThatThrownBy(service::work)
                            .as("@DistributedLock(waitTime = \"5s\"), round %d", round)
                            .isInstanceOf(LockBackendException.class)
                            .hasMessageContaining("bad-day");
                    assertThat(since(t0))
                            .as("@DistributedLock: within the wait plus one request timeout")
                            .isLessThan(
                                    Duration.ofSeconds(5).plus(CONNECT_TIMEOUT).plus(MARGIN));
                    assertThat(service.runs()).as("the method did not run").isEqualTo(1);

                    AtomicBoolean ran = new AtomicBoolean();
                    long t1 = System.nanoTime();
                    assertThatThrownBy(() -> client.withLock("bad-day-direct", Duration.ofSeconds(2), () -> {
                                ran.set(true);
                                return "ran";
                            }))
                            .as("withLock(name, 2s, ...), round %d", round)
                            .isInstanceOf(LockBackendException.class)
                            .hasMessageContaining("bad-day-direct");
                    assertThat(since(t1))
                            .as("withLock: within the wait plus one request timeout")
                            .isLessThan(
                                    Duration.ofSeconds(2).plus(CONNECT_TIMEOUT).plus(MARGIN));
                    assertThat(ran).as("the action did not run").isFalse();
                }
            } finally {
                redis.restart();
            }

            // Back: both work again without a restart of the application.
            await().atMost(Timing.scale(Duration.ofSeconds(30)))
                    .ignoreException(LockBackendException.class)
                    .until(service::work, "ran"::equals);
            assertThat(client.withLock("bad-day-direct", Duration.ofSeconds(2), () -> "ran"))
                    .isEqualTo("ran");
            MeterRegistry r = ctx.getBean(MeterRegistry.class);
            assertThat(acquires(r, "timeout", null))
                    .as("an unreachable backend is never counted as a timeout")
                    .isZero();
            assertThat(acquires(r, "error", LockBackendException.class.getSimpleName()))
                    .as("dlock.acquire outcome=error error=LockBackendException")
                    .isGreaterThanOrEqualTo(4);
        });
    }

    @Test
    void scheduledLock_serverKilledThenRestarted_eachRunErrorWithOneWarn_thenRunsAgain() {
        try (CapturedStderr err = new CapturedStderr()) {
            runner("outage-scheduled").withUserConfiguration(Scheduling.class).run(ctx -> {
                MeterRegistry r = ctx.getBean(MeterRegistry.class);
                Tick job = ctx.getBean(Tick.class);
                List<Throwable> toScheduler = ctx.getBean(Scheduling.class).errors;
                await().atMost(Timing.scale(Duration.ofSeconds(10))).until(() -> runs(r, "ran") >= 2);
                assertThat(runs(r, "error")).isZero();

                redis.kill();
                double ranDuring;
                try {
                    await().atMost(Timing.scale(Duration.ofSeconds(20))).until(() -> runs(r, "error") >= 2);
                    ranDuring = runs(r, "ran"); // a run that got its lock just before the kill counts here
                    double errorsBefore = runs(r, "error");
                    await().atMost(Timing.scale(Duration.ofSeconds(20)))
                            .until(() -> runs(r, "error") >= errorsBefore + 2);
                    assertThat(runs(r, "ran"))
                            .as("no run while the server is down")
                            .isEqualTo(ranDuring);
                    assertThat(job.runs()).as("the job body ran once per 'ran'").isEqualTo((int) ranDuring);
                    assertThat(runs(r, "skipped"))
                            .as("an unreachable backend is not 'held elsewhere'")
                            .isZero();
                } finally {
                    redis.restart();
                }

                await().atMost(Timing.scale(Duration.ofSeconds(30))).until(() -> runs(r, "ran") > ranDuring);
                double errors = runs(r, "error");
                assertThat(errors).isGreaterThanOrEqualTo(4);
                assertThat(acquires(r, "error", LockBackendException.class.getSimpleName()))
                        .as("dlock.acquire outcome=error, error tag naming the failure, once per failed run")
                        .isEqualTo((long) errors);
                assertThat(runs(r, "skipped")).isZero();
                assertThat(scheduledRunTags(r))
                        .as("dlock.scheduled.runs carries no error tag")
                        .allSatisfy(keys -> assertThat(keys)
                                .containsExactlyInAnyOrder(
                                        LockMetricNames.TAG_BACKEND,
                                        LockMetricNames.TAG_LOCK,
                                        LockMetricNames.TAG_OUTCOME));

                // The single scheduler thread ran a successful run after every failed one: all logged.
                List<String> warns = err.warnings("[lock=" + JOB + "]", "scheduled job Tick.tick not run");
                assertThat(warns).as("one WARN per failed run").hasSize((int) errors);
                assertThat(warns).allSatisfy(w -> assertThat(w).contains(LockBackendException.class.getName()));
                assertThat(toScheduler)
                        .as("each failed run reached the scheduler's ErrorHandler")
                        .hasSize((int) errors)
                        .allSatisfy(e -> assertThat(e).isInstanceOf(LockBackendException.class));
            });
        }
    }

    @Test
    void scheduledLock_heldByAnotherClient_skippedNoErrorNoWarn_thenRunsAgain() throws Exception {
        String ns = "outage-held";
        redis.markFreshPrefix(ns);
        try (CapturedStderr err = new CapturedStderr();
                LockClient other = LockClient.connect(redis.uri(ns))) {
            runner(ns).withUserConfiguration(Scheduling.class).run(ctx -> {
                MeterRegistry r = ctx.getBean(MeterRegistry.class);
                Tick job = ctx.getBean(Tick.class);
                await().atMost(Timing.scale(Duration.ofSeconds(10))).until(() -> runs(r, "ran") >= 1);
                double ranBefore;
                // Between two runs (the job releases at once), the other client takes the lock.
                try (Lease held = other.lock(JOB)
                        .tryAcquire(Timing.scale(Duration.ofSeconds(5)))
                        .orElseThrow()) {
                    ranBefore = runs(r, "ran");
                    int bodiesBefore = job.runs(); // the last run released after its body returned
                    await().atMost(Timing.scale(Duration.ofSeconds(10))).until(() -> runs(r, "skipped") >= 3);
                    assertThat(runs(r, "ran")).isEqualTo(ranBefore);
                    assertThat(job.runs()).as("no run while held elsewhere").isEqualTo(bodiesBefore);
                    assertThat(held.isValid()).isTrue();
                }
                await().atMost(Timing.scale(Duration.ofSeconds(10))).until(() -> runs(r, "ran") > ranBefore);
                assertThat(runs(r, "error")).isZero();
                assertThat(scheduledRunTags(r)).allSatisfy(keys -> assertThat(keys)
                        .containsExactlyInAnyOrder(
                                LockMetricNames.TAG_BACKEND, LockMetricNames.TAG_LOCK, LockMetricNames.TAG_OUTCOME));
                assertThat(acquires(r, "error", null))
                        .as("no acquire counted as an error")
                        .isZero();
                assertThat(acquires(r, "timeout", "none"))
                        .as("the skipped runs' acquires: timeouts, error tag 'none'")
                        .isGreaterThanOrEqualTo(3);
                assertThat(acquires(r, "timeout", null)).isEqualTo(acquires(r, "timeout", "none"));
                assertThat(err.warnings("[lock=" + JOB + "]"))
                        .as("a skipped run is not a WARN")
                        .isEmpty();
                assertThat(ctx.getBean(Scheduling.class).errors).isEmpty();
            });
        }
    }

    private static Duration since(long t0) {
        return Duration.ofNanos(System.nanoTime() - t0);
    }

    /** {@code dlock.scheduled.runs} of the job with this outcome. */
    private static double runs(MeterRegistry r, String outcome) {
        return r
                .find(ScheduledRunRecorder.METER)
                .tag(LockMetricNames.TAG_LOCK, JOB)
                .tag(LockMetricNames.TAG_OUTCOME, outcome)
                .counters()
                .stream()
                .mapToDouble(Counter::count)
                .sum();
    }

    /** The tag keys of each {@code dlock.scheduled.runs} counter. */
    private static List<Set<String>> scheduledRunTags(MeterRegistry r) {
        return r.find(ScheduledRunRecorder.METER).counters().stream()
                .map(c -> c.getId().getTags().stream().map(Tag::getKey).collect(Collectors.toSet()))
                .toList();
    }

    /** {@code dlock.acquire} timings with this outcome and, unless null, this {@code error} tag. */
    private static long acquires(MeterRegistry r, String outcome, @Nullable String error) {
        var search = r.find(LockMetricNames.ACQUIRE).tag(LockMetricNames.TAG_OUTCOME, outcome);
        if (error != null) {
            search = search.tag("error", error);
        }
        return search.timers().stream().mapToLong(Timer::count).sum();
    }
}
