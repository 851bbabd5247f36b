package io.dlock.spring.boot;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.dlock.Lease;
import io.dlock.LockBackendException;
import io.dlock.LockClient;
import io.dlock.spring.boot.autoconfigure.DLockAutoConfiguration;
import io.dlock.spring.boot.internal.HealthCheck;
import io.dlock.spring.boot.internal.LazyLockClient;
import io.dlock.testkit.FreePorts;
import io.dlock.testkit.RedisServer;
import java.time.Duration;
import java.util.Optional;
import java.util.Set;
import java.util.function.Supplier;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

/**
 * {@code dlock.connect=lazy} (the default) against a Redis port where nothing listens at first: the
 * application starts, reports DOWN and fails lock calls with {@link LockBackendException}, then
 * works once a real Redis starts on that port, without a restart.
 */
class LazyConnectIT {
    private static final String NS = "lazy";

    private static ApplicationContextRunner runner(int port) {
        return new ApplicationContextRunner()
                .withConfiguration(StarterConfigs.ALL)
                .withPropertyValues(
                        "dlock.uri=redis://127.0.0.1:" + port + "?keyPrefix=" + NS,
                        "dlock.lease-time=2s",
                        "dlock.connect-timeout=2s",
                        "dlock.retry.base-sleep=100ms",
                        "dlock.retry.max-sleep=500ms",
                        "dlock.health.timeout=2s",
                        "dlock.health.probe-interval=200ms")
                .withBean(Orders.Counter.class, Orders.Counter::new)
                .withBean("keys", Orders.Keys.class, Orders.Keys::new)
                .withBean(Orders.class);
    }

    @Test
    void backendDown_contextStartsDownAndFails_thenServerStarts_upAndWorksWithoutRestart() {
        int port = FreePorts.loopback();
        try (CapturedStderr err = new CapturedStderr()) {
            runner(port).run(ctx -> {
                assertThat(ctx).hasNotFailed();
                LockClient client = ctx.getBean(LockClient.class);
                assertThat(client).isInstanceOf(LazyLockClient.class);
                Supplier<HealthCheck.Report> health = BootLine.health(ctx);

                HealthCheck.Report down = health.get();
                assertThat(down.status()).isEqualTo(HealthCheck.DOWN);
                assertThat(down.details())
                        .containsEntry("backend", "redis")
                        .containsEntry("state", "CONNECTING")
                        .containsEntry("uri", "redis://127.0.0.1:" + port + "?keyPrefix=" + NS)
                        .containsKey("error");

                Orders orders = ctx.getBean(Orders.class);
                assertThatThrownBy(() -> orders.token(1))
                        .isInstanceOf(LockBackendException.class)
                        .hasMessageContaining("redis")
                        .hasMessageContaining("not connected");
                assertThatThrownBy(() -> client.lock("direct").tryAcquire(Duration.ZERO))
                        .isInstanceOf(LockBackendException.class);
                assertThat(client.lock("direct").acquireAsync(Duration.ZERO))
                        .failsWithin(Duration.ofSeconds(1))
                        .withThrowableOfType(java.util.concurrent.ExecutionException.class)
                        .withCauseInstanceOf(LockBackendException.class);
                assertThat(client.semaphore("pool", 2).acquireAsync(1, Duration.ZERO))
                        .failsWithin(Duration.ofSeconds(1))
                        .withThrowableOfType(java.util.concurrent.ExecutionException.class)
                        .withCauseInstanceOf(LockBackendException.class);
                assertThatThrownBy(() -> client.semaphore("pool", 2).acquireAsync(3, Duration.ZERO))
                        .as("permits are still checked at once")
                        .isInstanceOf(IllegalArgumentException.class);
                java.util.List<Long> elected = new java.util.concurrent.CopyOnWriteArrayList<>();
                io.dlock.LeaderElection election = client.leaderElection("lazy-leader")
                        .onElected(term -> elected.add(term.fencingToken()))
                        .start();
                assertThat(election.leadership())
                        .as("not connected: leads nothing")
                        .isEmpty();
                assertThat(election.awaitLeadership(Duration.ofMillis(100))).isEmpty();
                assertThatThrownBy(election::currentLeader).isInstanceOf(LockBackendException.class);
                assertThatThrownBy(() -> client.leaderElection("has space"))
                        .isInstanceOf(IllegalArgumentException.class);
                assertThatThrownBy(() -> client.lock("has space"))
                        .as("names are still checked at once")
                        .isInstanceOf(IllegalArgumentException.class);

                // Several failed attempts, one WARN for the series.
                LazyLockClient lazy = (LazyLockClient) client;
                await().atMost(Duration.ofSeconds(20)).until(() -> lazy.attempts() >= 3);
                assertThat(err.warnings("cannot connect to redis://127.0.0.1:" + port))
                        .hasSize(1);

                try (RedisServer redis = RedisServer.builder().port(port).start()) {
                    redis.markFreshPrefix(NS);
                    await().atMost(Duration.ofSeconds(30))
                            .untilAsserted(
                                    () -> assertThat(health.get().status()).isEqualTo(HealthCheck.UP));
                    long token = await().atMost(Duration.ofSeconds(30))
                            .ignoreException(LockBackendException.class)
                            .until(() -> orders.token(1), t -> t > 0);
                    assertThat(token).isPositive();
                    try (Lease l =
                            client.lock("direct").tryAcquire(Duration.ZERO).orElseThrow()) {
                        assertThat(l.isValid()).isTrue();
                    }
                    // The election started before the connection joins once connected.
                    io.dlock.Lease term =
                            election.awaitLeadership(Duration.ofSeconds(30)).orElseThrow();
                    assertThat(election.currentLeader().orElseThrow().term()).isEqualTo(term.fencingToken());
                    await().atMost(Duration.ofSeconds(5)).until(() -> elected.contains(term.fencingToken()));
                    election.close();
                    assertThat(term.isValid()).isFalse();
                    try (Lease permit = client.semaphore("pool", 2)
                            .acquireAsync(2, Duration.ofSeconds(5))
                            .get(10, java.util.concurrent.TimeUnit.SECONDS)) {
                        assertThat(permit.isValid()).isTrue();
                    }
                }
            });
        }
    }

    @Test
    void contextClosed_whileConnectRetries_connectorThreadStops() {
        int port = FreePorts.loopback();
        Set<String> before = dlockThreads();
        runner(port).run(ctx -> {
            LazyLockClient lazy = (LazyLockClient) ctx.getBean(LockClient.class);
            await().atMost(Duration.ofSeconds(20)).until(() -> lazy.attempts() >= 2);
            assertThat(dlockThreads()).contains("dlock-connect-redis");
        });
        await().atMost(Duration.ofSeconds(5)).untilAsserted(() -> assertThat(dlockThreads())
                .as("threads left after close")
                .isSubsetOf(before));
    }

    @Test
    void reachableBackend_firstCallsRightAfterStartup_succeed() {
        try (RedisServer redis = RedisServer.start()) {
            redis.markFreshPrefix(NS);
            runner(redis.port()).run(ctx -> {
                assertThat(ctx.getBean(Orders.class).token(1)).isPositive();
                assertThat(BootLine.healthNow(ctx).status()).isEqualTo(HealthCheck.UP);
            });
        }
    }

    @Test
    void misconfiguredUri_failsStartupAtOnce_unreachableDoesNot() {
        ApplicationContextRunner r =
                new ApplicationContextRunner().withConfiguration(AutoConfigurations.of(DLockAutoConfiguration.class));
        long t0 = System.nanoTime();
        r.withPropertyValues("dlock.uri=redis://127.0.0.1:1?noSuchOption=1")
                .run(ctx -> assertThat(messages(ctx.getStartupFailure())).contains("noSuchOption"));
        r.withPropertyValues("dlock.uri=redis://127.0.0.1:1?leaseTime=soon")
                .run(ctx -> assertThat(messages(ctx.getStartupFailure())).contains("leaseTime"));
        r.withPropertyValues("dlock.uri=nosuch://127.0.0.1:1").run(ctx -> assertThat(messages(ctx.getStartupFailure()))
                .contains("unknown dlock URI scheme 'nosuch'"));
        r.withPropertyValues("dlock.uri=redis://user:pw@127.0.0.1:1/ has space")
                .run(ctx -> assertThat(messages(ctx.getStartupFailure()))
                        .contains("malformed dlock URI")
                        .doesNotContain("pw@"));
        assertThat(Duration.ofNanos(System.nanoTime() - t0))
                .as("no connection attempt behind these failures")
                .isLessThan(Duration.ofSeconds(5));
        assertThat(dlockThreads()).doesNotContain("dlock-connect-redis");
        r.withPropertyValues("dlock.uri=redis://127.0.0.1:1", "dlock.connect-timeout=1s")
                .run(ctx -> assertThat(ctx).hasNotFailed());
        r.withPropertyValues("dlock.uri=redis://127.0.0.1:1", "dlock.connect=eager", "dlock.connect-timeout=1s")
                .run(ctx -> assertThat(ctx).hasFailed());
    }

    private static Set<String> dlockThreads() {
        return Thread.getAllStackTraces().keySet().stream()
                .filter(Thread::isAlive)
                .map(Thread::getName)
                .filter(n -> n.startsWith("dlock-") || n.startsWith("lettuce"))
                .collect(Collectors.toSet());
    }

    private static String messages(Throwable t) {
        assertThat(t).as("startup failure").isNotNull();
        StringBuilder sb = new StringBuilder();
        for (Throwable c = t; c != null; c = c.getCause()) {
            sb.append(c.getMessage()).append('\n');
        }
        return Optional.of(sb.toString()).orElseThrow();
    }
}
