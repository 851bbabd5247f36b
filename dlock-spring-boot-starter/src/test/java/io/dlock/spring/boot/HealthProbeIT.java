package io.dlock.spring.boot;

import static org.assertj.core.api.Assertions.assertThat;

import io.dlock.spring.boot.internal.HealthCheck;
import io.dlock.testkit.RedisServer;
import java.util.Set;
import java.util.function.Supplier;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

/**
 * The health indicator against a real Redis with a password: the lock probe (a Lua script on
 * Redis, a write) runs at most once per {@code dlock.health.probe-interval}, counted in the
 * server's own command statistics; the details name the backend and show the URI without its
 * password.
 */
class HealthProbeIT {
    private static final String PASSWORD = "s3cret-pw";
    /** The commands dlock-redis writes with. */
    private static final Set<String> SCRIPT_COMMANDS = Set.of("eval", "evalsha", "eval_ro", "evalsha_ro", "fcall");

    static RedisServer redis;

    @BeforeAll
    static void start() {
        redis = RedisServer.builder()
                .config("requirepass " + PASSWORD)
                .probePassword(PASSWORD)
                .start();
    }

    @AfterAll
    static void stop() {
        redis.close();
    }

    private static ApplicationContextRunner runner(String ns, String probeInterval) {
        redis.markFreshPrefix(ns);
        return unmarked(ns, probeInterval);
    }

    /** A runner on prefix {@code ns} as it is: a prefix nobody marked gets a data-loss fence. */
    private static ApplicationContextRunner unmarked(String ns, String probeInterval) {
        return new ApplicationContextRunner()
                .withConfiguration(StarterConfigs.ALL)
                .withPropertyValues(
                        "dlock.uri=redis://default:" + PASSWORD + "@127.0.0.1:" + redis.port() + "?keyPrefix=" + ns,
                        "dlock.health.timeout=10s",
                        "dlock.health.probe-interval=" + probeInterval);
    }

    /** Calls of dlock's script commands so far, from {@code INFO commandstats}. */
    private static long scriptCalls() {
        long calls = 0;
        for (String line : String.valueOf(redis.command("INFO", "commandstats")).split("\r?\n")) {
            if (!line.startsWith("cmdstat_")) {
                continue;
            }
            String name = line.substring("cmdstat_".length(), line.indexOf(':'));
            if (SCRIPT_COMMANDS.contains(name)) {
                String rest = line.substring(line.indexOf("calls=") + "calls=".length());
                calls += Long.parseLong(rest.substring(0, rest.indexOf(',')));
            }
        }
        return calls;
    }

    @Test
    void health_twentyCallsWithinTheProbeInterval_noWriteOnTheBackend() {
        runner("health-cached", "1h").run(ctx -> {
            Supplier<HealthCheck.Report> health = BootLine.health(ctx);
            long beforeFirst = scriptCalls();
            HealthCheck.Report first = health.get();
            assertThat(first.status()).as("%s", first.details()).isEqualTo(HealthCheck.UP);
            long afterFirst = scriptCalls();
            assertThat(afterFirst).as("the first call probes the backend").isGreaterThan(beforeFirst);
            for (int i = 0; i < 20; i++) {
                HealthCheck.Report h = health.get();
                assertThat(h.status()).isEqualTo(HealthCheck.UP);
                assertThat(h.details()).containsKey("probeAgeMillis");
            }
            assertThat(scriptCalls()).as("script calls during 20 cached checks").isEqualTo(afterFirst);
        });
    }

    @Test
    void health_probeIntervalZero_probesOnEveryCall() {
        runner("health-every", "0s").run(ctx -> {
            Supplier<HealthCheck.Report> health = BootLine.health(ctx);
            health.get();
            long before = scriptCalls();
            for (int i = 0; i < 5; i++) {
                assertThat(health.get().status()).isEqualTo(HealthCheck.UP);
            }
            assertThat(scriptCalls() - before)
                    .as("the count above would see a probe per call")
                    .isGreaterThanOrEqualTo(5);
        });
    }

    @Test
    void health_details_nameTheBackendAndRedactThePassword() {
        runner("health-details", "1h").run(ctx -> {
            HealthCheck.Report h = BootLine.healthNow(ctx);
            assertThat(h.status()).as("%s", h.details()).isEqualTo(HealthCheck.UP);
            assertThat(h.details())
                    .containsEntry("backend", "redis")
                    .containsEntry("uri", "redis://default:***@127.0.0.1:" + redis.port() + "?keyPrefix=health-details")
                    .containsEntry("probe", "granted");
            assertThat(BootLine.healthText(ctx)).doesNotContain(PASSWORD);
        });
    }

    @Test
    void health_onAFreshPrefix_saysFencedUntil_notHeldByAnotherClient_thenGranted() {
        // Never marked: the first acquire finds no epoch marker and fences the prefix for one lease.
        String ns = "health-fresh-" + System.nanoTime();
        unmarked(ns, "1h").withPropertyValues("dlock.lease-time=4s").run(ctx -> {
            Supplier<HealthCheck.Report> health = BootLine.health(ctx);
            HealthCheck.Report fenced = health.get();
            assertThat(fenced.status()).as("%s", fenced.details()).isEqualTo(HealthCheck.UP);
            assertThat(fenced.details()).containsEntry("probe", "fenced");
            assertThat(String.valueOf(fenced.details().get("fence")))
                    .startsWith("fenced until ")
                    .contains("key prefix '" + ns + "'");
            // Once the fence is over, the cached "fenced" probe is not reused: it probes again.
            org.awaitility.Awaitility.await()
                    .atMost(java.time.Duration.ofSeconds(10))
                    .until(() -> "granted".equals(health.get().details().get("probe")));
            assertThat(health.get().details()).doesNotContainKey("fence");
        });
    }
}
