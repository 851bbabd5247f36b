package io.dlock.shedlock;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.dlock.Lease;
import io.dlock.LockClient;
import io.dlock.testkit.DlockServer;
import io.dlock.testkit.NewDeployment;
import io.dlock.testkit.RedisServer;
import io.dlock.testkit.Timing;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import net.javacrumbs.shedlock.core.LockAssert;
import net.javacrumbs.shedlock.core.LockProvider;
import net.javacrumbs.shedlock.spring.annotation.EnableSchedulerLock;
import net.javacrumbs.shedlock.spring.annotation.SchedulerLock;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.context.annotation.AnnotationConfigApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.env.MapPropertySource;
import org.springframework.scheduling.annotation.EnableScheduling;
import org.springframework.scheduling.annotation.Scheduled;

/**
 * An application written for ShedLock ({@code @EnableSchedulerLock}, {@code @SchedulerLock} on a
 * {@code @Scheduled} method) whose only change is its {@code LockProvider} bean: two application
 * contexts, two nodes, on one Redis. Both fire the job every 100 ms; the job takes 200 ms and keeps
 * the lock for at least 1 s, so the runs of both nodes together never overlap and start at least
 * {@code lockAtLeastFor} apart, and each run reads its fencing token.
 */
@DlockServer(DlockServer.Kind.REDIS)
class SchedulerLockApplicationIT {
    static final Duration LOCK_AT_LEAST_FOR = Duration.ofSeconds(1);
    static final Duration TASK = Duration.ofMillis(200);

    static RedisServer redis;

    /** One run of the job on one node. */
    record Run(String node, long token, long startNanos, long endNanos, boolean validAtEnd) {}

    static final List<Run> RUNS = new CopyOnWriteArrayList<>();
    static final AtomicInteger RUNNING = new AtomicInteger();
    static final AtomicInteger MAX_RUNNING = new AtomicInteger();

    @BeforeAll
    static void server(RedisServer started) {
        redis = started;
        NewDeployment.mark(started.uri("shedlock-app")); // else fenced for one lease, as a server that lost its data
    }

    @AfterAll
    static void clear() {
        RUNS.clear();
    }

    @Test
    void scheduledJob_twoNodes_runsOnOneAtATimePerPeriodAndReadsToken() {
        List<AnnotationConfigApplicationContext> nodes = new ArrayList<>();
        try {
            nodes.add(node("node-a"));
            nodes.add(node("node-b"));
            await().atMost(Timing.scale(Duration.ofSeconds(20))).until(() -> RUNS.size() >= 5);
        } finally {
            nodes.forEach(AnnotationConfigApplicationContext::close);
        }
        List<Run> runs = List.copyOf(RUNS);

        assertThat(MAX_RUNNING.get()).as("runs at once, over both nodes").isEqualTo(1);
        for (int i = 1; i < runs.size(); i++) {
            Run before = runs.get(i - 1);
            Run run = runs.get(i);
            assertThat(run.startNanos())
                    .as("run %d starts after run %d ended", i, i - 1)
                    .isGreaterThanOrEqualTo(before.endNanos());
            assertThat(Duration.ofNanos(run.startNanos() - before.startNanos()))
                    .as("run %d starts lockAtLeastFor after run %d", i, i - 1)
                    // lockAtLeastFor counts from the lock call, a little before the method body's start.
                    .isGreaterThanOrEqualTo(LOCK_AT_LEAST_FOR.minusMillis(200));
            assertThat(run.token()).as("fencing tokens rise run by run").isGreaterThan(before.token());
        }
        assertThat(runs).allSatisfy(r -> {
            assertThat(r.token()).isPositive();
            assertThat(r.validAtEnd()).isTrue();
        });
    }

    private static AnnotationConfigApplicationContext node(String name) {
        AnnotationConfigApplicationContext context = new AnnotationConfigApplicationContext();
        context.getEnvironment()
                .getPropertySources()
                .addFirst(new MapPropertySource("test", Map.of("node", name, "dlock.uri", redis.uri("shedlock-app"))));
        context.register(Application.class);
        context.refresh();
        return context;
    }

    /** The application: ShedLock's annotations as they were; the LockProvider bean is dlock's. */
    @Configuration
    @EnableScheduling
    @EnableSchedulerLock(defaultLockAtMostFor = "30s")
    static class Application {

        @Bean(destroyMethod = "close")
        LockClient lockClient(@Value("${dlock.uri}") String uri) {
            return LockClient.connect(uri);
        }

        @Bean
        LockProvider lockProvider(LockClient lockClient) {
            return DLockLockProvider.of(lockClient);
        }

        @Bean
        ReportJob reportJob(@Value("${node}") String node) {
            return new ReportJob(node);
        }
    }

    /** The scheduled job; public and not final, for ShedLock's method proxy. */
    public static class ReportJob {
        private final String node;

        public ReportJob(String node) {
            this.node = node;
        }

        @Scheduled(fixedRate = 100)
        @SchedulerLock(name = "nightly-report", lockAtMostFor = "10s", lockAtLeastFor = "1s")
        public void report() throws InterruptedException {
            LockAssert.assertLocked();
            Lease lease = DLockShedLock.currentLease();
            long start = System.nanoTime();
            int now = RUNNING.incrementAndGet();
            MAX_RUNNING.accumulateAndGet(now, Math::max);
            try {
                Thread.sleep(TASK.toMillis());
            } finally {
                RUNNING.decrementAndGet();
            }
            RUNS.add(new Run(node, lease.fencingToken(), start, System.nanoTime(), lease.isValid()));
        }
    }
}
