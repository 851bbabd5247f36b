package io.dlock.spring.boot;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.dlock.LeaderElection;
import io.dlock.Lease;
import io.dlock.LockClient;
import io.dlock.LockMetricNames;
import io.dlock.spring.boot.annotation.ScheduledLock;
import io.dlock.spring.boot.autoconfigure.DLockAutoConfiguration;
import io.dlock.testkit.RedisServer;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

/**
 * The meter table of docs/observability.md ("## Meters") names exactly the meters a client and the starter register
 * in a Spring Boot application with the actuator (a {@code SimpleMeterRegistry} and observations),
 * after an acquire, hold (renewed) and lose cycle and a scheduled run on a real Redis.
 */
class MetricsTableIT {
    private static final Pattern ROW = Pattern.compile("^\\s*\\|\\s*`(dlock\\.[a-z.]+)`\\s*\\|");
    private static final String NS = "metrics-table";

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
        @ScheduledLock(name = "table-job", lockAtMostFor = "10s")
        public void run() {}
    }

    /** The meter names of the table in the "## Meters" section of docs/observability.md. */
    static Set<String> readmeMeters() throws Exception {
        // Relative to the module directory: the starter, or dlock-spring-boot4-it, which compiles these sources.
        String readme = Files.readString(Path.of("..", "docs", "observability.md"), StandardCharsets.UTF_8);
        int start = readme.indexOf("\n## Meters");
        assertThat(start).as("docs/observability.md has a Meters section").isNotNegative();
        int end = readme.indexOf("\n## ", start + 1);
        List<String> lines =
                readme.substring(start, end < 0 ? readme.length() : end).lines().toList();
        Set<String> names = new TreeSet<>();
        for (String line : lines) {
            Matcher m = ROW.matcher(line);
            if (m.find()) {
                names.add(m.group(1));
            }
        }
        return names;
    }

    @Test
    void readmeTable_listsExactlyTheRegisteredMeters() throws Exception {
        Set<String> documented = readmeMeters();
        assertThat(documented).contains(LockMetricNames.ACQUIRE, "dlock.acquire.active");
        redis.markFreshPrefix(NS);
        new ApplicationContextRunner()
                .withConfiguration(BootLine.METRICS)
                .withConfiguration(AutoConfigurations.of(DLockAutoConfiguration.class))
                .withPropertyValues("dlock.uri=" + redis.uri(NS), "dlock.lease-time=2s")
                .withBean(Job.class)
                .run(ctx -> {
                    MeterRegistry registry = ctx.getBean(MeterRegistry.class);
                    ctx.getBean(Job.class).run();
                    LockClient client = ctx.getBean(LockClient.class);
                    Lease lease = client.lock("cycle").acquire();
                    await().atMost(Duration.ofSeconds(10)).until(() -> count(registry, LockMetricNames.RENEWAL) >= 1);
                    // The server forgets the grant: the next renewal finds it gone and the lease is lost.
                    await().atMost(Duration.ofSeconds(15)).until(() -> {
                        deleteGrants();
                        return !lease.isValid();
                    });
                    lease.close();
                    await().atMost(Duration.ofSeconds(5)).until(() -> count(registry, LockMetricNames.LEASE_LOST) >= 1);
                    LeaderElection election = client.leaderElection("table").start();
                    election.awaitLeadership(Duration.ofSeconds(10))
                            .orElseThrow()
                            .close(); // given up
                    assertThat(election.awaitLeadership(Duration.ofSeconds(10))).isPresent(); // rejoined, alone
                    Set<String> registered = registry.getMeters().stream()
                            .map(m -> m.getId().getName())
                            .filter(n -> n.startsWith("dlock."))
                            .collect(Collectors.toCollection(TreeSet::new));
                    assertThat(registered).as("meters registered").isEqualTo(documented);
                    election.close();
                    assertThat(registry.find(LockMetricNames.LEADER).gauges()).isEmpty();
                });
    }

    private static double count(MeterRegistry r, String name) {
        return r.find(name).counters().stream().mapToDouble(Counter::count).sum();
    }

    @SuppressWarnings("unchecked")
    private static void deleteGrants() {
        for (String key : (List<String>) redis.command("KEYS", NS + ":*")) {
            if (!key.endsWith(":epoch")) {
                redis.command("DEL", key);
            }
        }
    }
}
