package io.dlock.spring.boot;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.dlock.Lease;
import io.dlock.LockClient;
import io.dlock.LockMetricNames;
import io.dlock.LockTimeoutException;
import io.dlock.spring.boot.annotation.DistributedLocks;
import io.dlock.spring.boot.internal.HealthCheck;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Supplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

/** Micrometer binding and the health indicator against a server these tests stop and restart. */
abstract class MetricsHealthContract {
    static Backend backend;

    String ns;
    private final ExecutorService pool = Executors.newCachedThreadPool();

    @BeforeEach
    void namespace(TestInfo info) {
        ns = "t-" + info.getTestMethod().orElseThrow().getName();
    }

    @AfterEach
    void cleanUp() {
        pool.shutdownNow();
    }

    ApplicationContextRunner runner() {
        return new ApplicationContextRunner()
                .withConfiguration(StarterConfigs.ALL)
                .withPropertyValues(
                        "dlock.uri=" + backend.uri(ns),
                        backend.shortLeaseProperty(),
                        "dlock.connect-timeout=5s",
                        "dlock.health.timeout=5s", // the first check waits for the first connection, slow on a loaded
                        // machine
                        "dlock.health.probe-interval=200ms")
                .withBean(MeterRegistry.class, SimpleMeterRegistry::new)
                .withBean(Orders.Counter.class, Orders.Counter::new)
                .withBean("keys", Orders.Keys.class, Orders.Keys::new)
                .withBean(Orders.class);
    }

    private static double acquires(MeterRegistry r, String outcome) {
        var t = r.find(LockMetricNames.ACQUIRE)
                .tag(LockMetricNames.TAG_OUTCOME, outcome)
                .timers();
        return t.stream().mapToDouble(x -> x.count()).sum();
    }

    @Test
    void metrics_acquisitionsTimeoutsAndALostLease_areCounted() {
        runner().run(ctx -> {
            MeterRegistry registry = ctx.getBean(MeterRegistry.class);
            Orders orders = ctx.getBean(Orders.class);
            orders.token(1);
            orders.token(2);
            assertThat(acquires(registry, "acquired")).isEqualTo(2);
            try (LockClient other = LockClient.connect(backend.uri(ns));
                    Lease held = other.lock("order:1").acquire()) {
                assertThatThrownBy(() -> orders.token(1)).isInstanceOf(LockTimeoutException.class);
            }
            assertThat(acquires(registry, "timeout")).isEqualTo(1);
            assertThat(registry.find(LockMetricNames.LEASE_LOST).counters())
                    .allSatisfy(c -> assertThat(c.count()).isZero());

            // A lease held while the server goes away is lost, and counted once.
            CountDownLatch entered = new CountDownLatch(1);
            CountDownLatch go = new CountDownLatch(1);
            AtomicReference<Lease> lease = new AtomicReference<>();
            Future<Long> holder = pool.submit(() -> orders.hold(
                    "lost",
                    new CountDownLatch(0) {
                        @Override
                        public void countDown() {
                            lease.set(DistributedLocks.currentLease());
                            entered.countDown();
                        }
                    },
                    go));
            assertThat(entered.await(10, TimeUnit.SECONDS)).isTrue();
            assertThat(registry.get(LockMetricNames.HELD).gauge().value()).isEqualTo(1);
            backend.stop();
            try {
                await().atMost(Duration.ofSeconds(30)).until(() -> !lease.get().isValid());
                await().atMost(Duration.ofSeconds(5))
                        .untilAsserted(() -> assertThat(registry.find(LockMetricNames.LEASE_LOST).counters().stream()
                                        .mapToDouble(c -> c.count())
                                        .sum())
                                .isEqualTo(1));
            } finally {
                backend.restart();
            }
            go.countDown();
            holder.get(30, TimeUnit.SECONDS);
        });
    }

    @Test
    void health_serverStoppedAndRestarted_goesDownAndBackUp() {
        runner().run(ctx -> {
            Supplier<HealthCheck.Report> health = BootLine.health(ctx);
            HealthCheck.Report first = health.get();
            assertThat(first.status()).as("%s", first.details()).isEqualTo(HealthCheck.UP);
            backend.stop();
            try {
                await().atMost(Duration.ofSeconds(30))
                        .until(() -> health.get().status().equals(HealthCheck.DOWN));
            } finally {
                backend.restart();
            }
            await().atMost(Duration.ofSeconds(60))
                    .until(() -> health.get().status().equals(HealthCheck.UP));
        });
    }

    @Test
    void health_probeHeldByAnotherNode_isUp() throws Exception {
        runner().run(ctx -> {
            Supplier<HealthCheck.Report> health = BootLine.health(ctx);
            try (LockClient other = LockClient.connect(backend.uri(ns));
                    Lease held = other.lock("dlock-health").acquire()) {
                var h = health.get();
                assertThat(h.status()).isEqualTo(HealthCheck.UP);
                assertThat(h.details()).containsEntry("probe", "held by another client");
            }
        });
    }
}
