package io.dlock.spring.boot;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.dlock.Lease;
import io.dlock.LockClient;
import io.dlock.LockTimeoutException;
import io.dlock.spring.boot.annotation.DistributedLock;
import io.dlock.spring.boot.annotation.DistributedLocks;
import io.dlock.spring.boot.annotation.ScheduledLock;
import io.dlock.spring.boot.autoconfigure.DLockAutoConfiguration;
import java.time.Duration;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

/**
 * {@code ${...}} placeholders and {@code #{...}} SpEL in the annotations' names and durations,
 * resolved against the Environment at startup, on a real ZooKeeper.
 */
class PlaceholdersIT {
    static Backend backend;

    @BeforeAll
    static void start() {
        backend = Backend.zookeeper();
    }

    @AfterAll
    static void stop() {
        backend.close();
    }

    public static class Jobs {
        @ScheduledLock(name = "${jobs.name:placeholder-job}", lockAtMostFor = "${jobs.max:1m}")
        public String placeholders() {
            return report();
        }

        @ScheduledLock(name = "spel-job", lockAtMostFor = "#{'${jobs.spel-ms:60000}' + 'ms'}")
        public String spel() {
            return report();
        }

        @DistributedLock(key = "'waiting'", waitTime = "${jobs.wait:0s}")
        public String waiting() {
            return "ran";
        }

        /** The lock's name, and whether its lease is still valid after 2 s (hold bound not reached). */
        static String report() {
            Lease lease = DistributedLocks.currentLease();
            long deadline = System.nanoTime() + Duration.ofSeconds(2).toNanos();
            while (lease.isValid() && System.nanoTime() < deadline) {
                try {
                    Thread.sleep(20);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    break;
                }
            }
            return lease.lockName() + (lease.isValid() ? ":valid" : ":released");
        }
    }

    public static class Unresolvable {
        @ScheduledLock(name = "x", lockAtMostFor = "${jobs.missing}")
        public void run() {}
    }

    private ApplicationContextRunner runner(String ns) {
        return new ApplicationContextRunner()
                .withConfiguration(AutoConfigurations.of(DLockAutoConfiguration.class))
                .withPropertyValues("dlock.uri=" + backend.uri(ns));
    }

    @Test
    void scheduledLock_placeholderDefaults_resolvedAtStartup() {
        runner("ph-defaults").withBean(Jobs.class).run(ctx -> {
            assertThat(ctx).hasNotFailed();
            assertThat(ctx.getBean(Jobs.class).placeholders())
                    .as("name from the placeholder's default; lockAtMostFor 1m keeps the lease")
                    .isEqualTo("placeholder-job:valid");
        });
    }

    @Test
    void scheduledLock_placeholderPropertiesSet_resolvedFromEnvironment() {
        runner("ph-set")
                .withPropertyValues("jobs.name=custom-job", "jobs.max=500ms")
                .withBean(Jobs.class)
                .run(ctx -> assertThat(ctx.getBean(Jobs.class).placeholders())
                        .as("name from the property; lockAtMostFor 500ms releases the lease while it runs")
                        .isEqualTo("custom-job:released"));
    }

    @Test
    void scheduledLock_spelExpression_evaluated() {
        runner("ph-spel")
                .withBean(Jobs.class)
                .run(ctx -> assertThat(ctx.getBean(Jobs.class).spel()).isEqualTo("spel-job:valid"));
        runner("ph-spel")
                .withPropertyValues("jobs.spel-ms=400")
                .withBean(Jobs.class)
                .run(ctx -> assertThat(ctx.getBean(Jobs.class).spel()).isEqualTo("spel-job:released"));
    }

    @Test
    void distributedLock_waitTimePlaceholder_resolved() throws Exception {
        String ns = "ph-wait";
        try (LockClient other = LockClient.connect(backend.uri(ns))) {
            runner(ns)
                    .withPropertyValues("jobs.wait=700ms")
                    .withBean(Jobs.class)
                    .run(ctx -> {
                        Jobs jobs = ctx.getBean(Jobs.class);
                        try (Lease held = other.lock("waiting").acquire()) {
                            long t0 = System.nanoTime();
                            assertThatThrownBy(jobs::waiting).isInstanceOf(LockTimeoutException.class);
                            assertThat(Duration.ofNanos(System.nanoTime() - t0))
                                    .as("waited the resolved 700ms, not the default 0s")
                                    .isGreaterThanOrEqualTo(Duration.ofMillis(650));
                        }
                        assertThat(jobs.waiting()).isEqualTo("ran");
                    });
        }
    }

    @Test
    void unresolvablePlaceholder_failsStartupNamingTheMethod() {
        runner("ph-missing").withBean(Unresolvable.class).run(ctx -> assertThat(messages(ctx.getStartupFailure()))
                .contains("Unresolvable.run")
                .contains("lockAtMostFor")
                .contains("jobs.missing"));
    }

    static String messages(Throwable t) {
        assertThat(t).as("startup failure").isNotNull();
        StringBuilder sb = new StringBuilder();
        for (Throwable c = t; c != null; c = c.getCause()) {
            sb.append(c.getMessage()).append('\n');
        }
        return sb.toString();
    }
}
