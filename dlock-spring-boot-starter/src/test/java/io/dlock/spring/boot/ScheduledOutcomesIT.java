package io.dlock.spring.boot;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.dlock.Lease;
import io.dlock.LockBackendException;
import io.dlock.LockClient;
import io.dlock.LockMetricNames;
import io.dlock.LockTimeoutException;
import io.dlock.spring.boot.annotation.DistributedLock;
import io.dlock.spring.boot.annotation.ScheduledLock;
import io.dlock.spring.boot.annotation.ScheduledRunRecorder;
import io.dlock.spring.boot.autoconfigure.DLockAutoConfiguration;
import io.dlock.testkit.FreePorts;
import io.dlock.testkit.RedisServer;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
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
 * What a {@code @ScheduledLock} run that does not run is: skipped (another node holds the lock, not
 * an error) or an error (backend unreachable: counted, one WARN, rethrown to the scheduler); and
 * {@code @DistributedLock}'s backend failures and timeouts, rethrown without a WARN.
 */
class ScheduledOutcomesIT {
    static RedisServer redis;

    @BeforeAll
    static void start() {
        redis = RedisServer.start();
    }

    @AfterAll
    static void stop() {
        redis.close();
    }

    public static class Job {
        final AtomicInteger runs = new AtomicInteger();

        @ScheduledLock(name = "nightly", lockAtMostFor = "10s")
        public void nightly() {
            runs.incrementAndGet();
        }

        public int runs() {
            return runs.get();
        }

        @DistributedLock(key = "'direct'", waitTime = "200ms")
        public String direct() {
            return "ran";
        }
    }

    /** A scheduler whose ErrorHandler keeps what reaches it. */
    @Configuration(proxyBeanMethods = false)
    @EnableScheduling
    static class Scheduling {
        static final List<Throwable> ERRORS = new CopyOnWriteArrayList<>();

        @Bean
        ThreadPoolTaskScheduler taskScheduler() {
            ThreadPoolTaskScheduler s = new ThreadPoolTaskScheduler();
            s.setErrorHandler(ERRORS::add);
            return s;
        }

        @Bean
        ScheduledJob scheduledJob() {
            return new ScheduledJob();
        }
    }

    public static class ScheduledJob {
        @Scheduled(fixedDelay = 200)
        @ScheduledLock(name = "every-200ms", lockAtMostFor = "5s")
        public void tick() {}
    }

    private static ApplicationContextRunner runner(String uri) {
        return new ApplicationContextRunner()
                .withConfiguration(AutoConfigurations.of(DLockAutoConfiguration.class))
                .withPropertyValues(
                        "dlock.uri=" + uri,
                        "dlock.connect-timeout=2s",
                        "dlock.retry.base-sleep=100ms",
                        "dlock.retry.max-sleep=500ms")
                .withBean(MeterRegistry.class, SimpleMeterRegistry::new)
                .withBean(Job.class);
    }

    private static double runs(MeterRegistry r, String lock, String outcome) {
        return r
                .find(ScheduledRunRecorder.METER)
                .tag(LockMetricNames.TAG_LOCK, lock)
                .tag(LockMetricNames.TAG_OUTCOME, outcome)
                .counters()
                .stream()
                .mapToDouble(Counter::count)
                .sum();
    }

    @Test
    void scheduledRun_lockHeldElsewhere_countsSkippedNoErrorTagNoWarn() throws Exception {
        String uri = uri("outcome-skipped");
        try (CapturedStderr err = new CapturedStderr();
                LockClient other = LockClient.connect(uri)) {
            runner(uri).run(ctx -> {
                Job job = ctx.getBean(Job.class);
                MeterRegistry r = ctx.getBean(MeterRegistry.class);
                job.nightly();
                assertThat(runs(r, "nightly", "ran")).isEqualTo(1);
                await().atMost(Duration.ofSeconds(5)).until(() -> other.lock("nightly")
                        .tryAcquire(Duration.ZERO)
                        .map(l -> {
                            l.close();
                            return true;
                        })
                        .orElse(false));
                try (Lease held = other.lock("nightly").acquire()) {
                    job.nightly();
                }
                assertThat(job.runs()).isEqualTo(1);
                assertThat(runs(r, "nightly", "skipped")).isEqualTo(1);
                assertThat(runs(r, "nightly", "error")).isZero();
                assertThat(r.find(ScheduledRunRecorder.METER).counters()).allSatisfy(c -> {
                    assertThat(c.getId().getTag("error")).isNull();
                    assertThat(c.getId().getTag(LockMetricNames.TAG_BACKEND)).isEqualTo("redis");
                });
                assertThat(err.warnings("nightly")).isEmpty();
            });
        }
    }

    @Test
    void scheduledRun_backendDown_countsErrorOneWarnPerRunRethrown() {
        int port = FreePorts.loopback();
        try (CapturedStderr err = new CapturedStderr()) {
            runner("redis://127.0.0.1:" + port + "?keyPrefix=outcome-error").run(ctx -> {
                Job job = ctx.getBean(Job.class);
                MeterRegistry r = ctx.getBean(MeterRegistry.class);
                assertThatThrownBy(job::nightly).isInstanceOf(LockBackendException.class);
                assertThatThrownBy(job::nightly).isInstanceOf(LockBackendException.class);
                assertThat(job.runs()).isZero();
                assertThat(runs(r, "nightly", "error")).isEqualTo(2);
                assertThat(runs(r, "nightly", "skipped")).isZero();
                List<String> warns = err.warnings("[lock=nightly]", "Job.nightly", "LockBackendException");
                assertThat(warns).as("one WARN per run").hasSize(2);
                assertThat(warns.get(0)).contains("not connected to redis://127.0.0.1:" + port);
            });
        }
    }

    @Test
    void scheduledJob_backendDown_errorReachesTheSchedulersErrorHandler() {
        int port = FreePorts.loopback();
        Scheduling.ERRORS.clear();
        runner("redis://127.0.0.1:" + port + "?keyPrefix=outcome-scheduler")
                .withUserConfiguration(Scheduling.class)
                .run(ctx -> await().atMost(Duration.ofSeconds(10)).untilAsserted(() -> assertThat(Scheduling.ERRORS)
                        .isNotEmpty()
                        .first()
                        .isInstanceOf(LockBackendException.class)));
    }

    @Test
    void distributedLock_backendDownOrTimeout_rethrownWithoutWarn() throws Exception {
        int port = FreePorts.loopback();
        try (CapturedStderr err = new CapturedStderr()) {
            runner("redis://127.0.0.1:" + port + "?keyPrefix=outcome-direct").run(ctx -> {
                Job job = ctx.getBean(Job.class);
                assertThatThrownBy(job::direct).isInstanceOf(LockBackendException.class);
            });
            String uri = uri("outcome-direct");
            try (LockClient other = LockClient.connect(uri)) {
                runner(uri).run(ctx -> {
                    Job job = ctx.getBean(Job.class);
                    assertThat(job.direct()).isEqualTo("ran");
                    try (Lease held = other.lock("direct").acquire()) {
                        assertThatThrownBy(job::direct).isInstanceOf(LockTimeoutException.class);
                    }
                });
            }
            assertThat(err.warnings("[lock=direct]")).isEmpty();
        }
    }

    private static String uri(String ns) {
        redis.markFreshPrefix(ns);
        return redis.uri(ns);
    }
}
