package io.dlock.spring.boot;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.dlock.Lease;
import io.dlock.LockClient;
import io.dlock.spring.boot.autoconfigure.DLockAutoConfiguration;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Configuration;
import org.springframework.scheduling.annotation.EnableScheduling;

/** {@code @ScheduledLock} with ShedLock's semantics, two application contexts on one real server. */
abstract class ScheduledLockContract {
    static Backend backend;

    String ns;
    LockClient other;

    @Configuration(proxyBeanMethods = false)
    @EnableScheduling
    static class Scheduling {}

    @BeforeEach
    void namespace(TestInfo info) {
        ns = "t-" + info.getTestMethod().orElseThrow().getName();
        other = LockClient.connect(backend.uri(ns));
    }

    @AfterEach
    void checkClean() {
        other.close();
        await().atMost(Duration.ofSeconds(10)).untilAsserted(() -> assertThat(backend.leftovers(ns))
                .as("left on %s under %s", backend.name(), ns)
                .isEmpty());
    }

    ApplicationContextRunner runner(List<Long> runs, boolean scheduling) {
        ApplicationContextRunner r = new ApplicationContextRunner()
                .withConfiguration(AutoConfigurations.of(DLockAutoConfiguration.class))
                .withPropertyValues("dlock.uri=" + backend.uri(ns))
                .withBean(Jobs.class, () -> new Jobs(runs));
        return scheduling ? r.withUserConfiguration(Scheduling.class) : r;
    }

    @Test
    void scheduledJob_twoNodes_runsExactlyOncePerPeriod() {
        List<Long> runs = Collections.synchronizedList(new ArrayList<>());
        runner(runs, true).run(a -> runner(runs, true).run(b -> {
            long start = System.currentTimeMillis();
            // Five two-second periods after both nodes are up.
            await().atMost(Duration.ofSeconds(30))
                    .until(() -> periods(runs, start).size() >= 5);
        }));
        // Each run holds the lock for lockAtLeastFor (1.5 s), so two runs for one trigger (the two
        // nodes at the same second) would be ms apart, and runs for successive triggers are 1.5 s
        // or more. Not one run per 2 s wall-clock bucket: a node whose trigger fires 1.5 s late may
        // run right after the other's lock ends, as ShedLock allows.
        List<Long> sorted;
        synchronized (runs) {
            sorted = runs.stream().sorted().toList();
        }
        for (int i = 1; i < sorted.size(); i++) {
            assertThat(sorted.get(i) - sorted.get(i - 1))
                    .as("ms between runs %d and %d of %s", i - 1, i, sorted)
                    .isGreaterThanOrEqualTo(1000);
        }
    }

    private static Map<Long, Long> periods(List<Long> runs, long from) {
        synchronized (runs) {
            return runs.stream()
                    .filter(t -> t >= from)
                    .collect(Collectors.groupingBy(t -> t / 2000, Collectors.counting()));
        }
    }

    @Test
    void scheduledJob_lockHeldElsewhere_skipsWithoutWaiting() throws Exception {
        runner(new ArrayList<>(), false).run(ctx -> {
            Jobs jobs = ctx.getBean(Jobs.class);
            try (Lease held = other.lock("cleanup").acquire()) {
                long t0 = System.nanoTime();
                jobs.cleanup();
                assertThat(Duration.ofNanos(System.nanoTime() - t0)).isLessThan(Duration.ofSeconds(2));
                assertThat(jobs.directRuns()).isZero();
            }
        });
    }

    @Test
    void scheduledJob_finishedEarly_keepsLockUntilAtLeastFor() {
        runner(new ArrayList<>(), false).run(ctx -> {
            Jobs jobs = ctx.getBean(Jobs.class);
            long t0 = System.nanoTime();
            jobs.cleanup();
            long returned = System.nanoTime();
            assertThat(jobs.directRuns()).isEqualTo(1);
            assertThat(Duration.ofNanos(returned - t0))
                    .as("the job's thread is not held back")
                    .isLessThan(Duration.ofMillis(900));
            assertThat(other.lock("cleanup").tryAcquire(Duration.ZERO))
                    .as("kept after the job returned")
                    .isEmpty();
            jobs.cleanup(); // a second run on this node within lockAtLeastFor is skipped too
            assertThat(jobs.directRuns()).isEqualTo(1);
            Lease l = await().pollInSameThread()
                    .atMost(Duration.ofSeconds(10))
                    .until(() -> other.lock("cleanup").tryAcquire(Duration.ZERO), Optional::isPresent)
                    .orElseThrow();
            long freed = System.nanoTime();
            l.close();
            assertThat(Duration.ofNanos(freed - t0)).isGreaterThanOrEqualTo(Duration.ofSeconds(1));
        });
    }

    @Test
    void scheduledJob_runsPastAtMostFor_lockReleasedWhileItRuns() {
        runner(new ArrayList<>(), false).run(ctx -> {
            assertThat(ctx.getBean(Jobs.class).longJob()).isTrue();
            Optional<Lease> l = other.lock("long-job").tryAcquire(Duration.ofSeconds(5));
            assertThat(l).isPresent();
            l.get().close();
        });
    }
}
