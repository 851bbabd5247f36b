package io.dlock.spring.boot;

import static org.assertj.core.api.Assertions.assertThat;

import io.dlock.Lease;
import io.dlock.LockClient;
import io.dlock.spring.boot.annotation.ScheduledLock;
import io.dlock.spring.boot.autoconfigure.DLockAutoConfiguration;
import java.time.Duration;
import java.util.Optional;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

/** {@code dlock.scheduled.default-lock-at-most-for} / {@code -at-least-for} on a real ZooKeeper. */
class ScheduledDefaultsIT {
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
        @ScheduledLock(name = "defaults")
        public String defaults() {
            return PlaceholdersIT.Jobs.report();
        }

        @ScheduledLock(name = "explicit", lockAtMostFor = "1m", lockAtLeastFor = "0s")
        public String explicit() {
            return PlaceholdersIT.Jobs.report();
        }
    }

    private ApplicationContextRunner runner(String ns) {
        return new ApplicationContextRunner()
                .withConfiguration(AutoConfigurations.of(DLockAutoConfiguration.class))
                .withPropertyValues("dlock.uri=" + backend.uri(ns))
                .withBean(Jobs.class);
    }

    @Test
    void emptyLockAtMostFor_noDefault_failsStartupNamingMethodAndProperty() {
        runner("def-none").run(ctx -> assertThat(PlaceholdersIT.messages(ctx.getStartupFailure()))
                .contains("Jobs.defaults")
                .contains("dlock.scheduled.default-lock-at-most-for"));
    }

    @Test
    void emptyAttributes_defaultsSet_boundAndMinimumHoldApplied() throws Exception {
        String ns = "def-set";
        try (LockClient other = LockClient.connect(backend.uri(ns))) {
            runner(ns)
                    .withPropertyValues(
                            "dlock.scheduled.default-lock-at-most-for=500ms",
                            "dlock.scheduled.default-lock-at-least-for=400ms")
                    .run(ctx -> {
                        Jobs jobs = ctx.getBean(Jobs.class);
                        assertThat(jobs.defaults())
                                .as("released by the default 500ms bound while it ran")
                                .isEqualTo("defaults:released");
                        assertThat(jobs.explicit())
                                .as("explicit attributes win over the defaults")
                                .isEqualTo("explicit:valid");
                        assertThat(other.lock("explicit").tryAcquire(Duration.ofSeconds(2)))
                                .as("explicit lockAtLeastFor=0s releases at once")
                                .isPresent()
                                .get()
                                .satisfies(Lease::close);
                    });
            runner(ns)
                    .withPropertyValues(
                            "dlock.scheduled.default-lock-at-most-for=10s",
                            "dlock.scheduled.default-lock-at-least-for=5s")
                    .run(ctx -> {
                        ctx.getBean(Jobs.class).defaults();
                        assertThat(other.lock("defaults").tryAcquire(Duration.ZERO))
                                .as("held for the default lockAtLeastFor after the job returned")
                                .isEmpty();
                        Lease l = Awaitility.await()
                                .pollInSameThread()
                                .atMost(Duration.ofSeconds(15))
                                .until(() -> other.lock("defaults").tryAcquire(Duration.ZERO), Optional::isPresent)
                                .orElseThrow();
                        l.close();
                    });
        }
    }
}
