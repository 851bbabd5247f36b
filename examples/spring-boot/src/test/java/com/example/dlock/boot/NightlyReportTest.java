package com.example.dlock.boot;

import static org.assertj.core.api.Assertions.assertThat;

import io.dlock.Lease;
import io.dlock.LockClient;
import io.dlock.testkit.EmbeddedZooKeeper;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

@SpringBootTest
class NightlyReportTest {
    // In this JVM; it ends with the test JVM, after Spring has closed the application's client.
    static final EmbeddedZooKeeper zk = EmbeddedZooKeeper.start();

    @DynamicPropertySource
    static void dlock(DynamicPropertyRegistry registry) {
        registry.add("dlock.uri", () -> zk.uri("reports"));
    }

    @Autowired
    NightlyReport report;

    @Test
    void run_whileRunning_anotherInstanceCannotTakeTheLock() throws Exception {
        try (LockClient otherInstance = LockClient.connect(zk.uri("reports"))) {
            AtomicReference<Optional<Lease>> duringRun = new AtomicReference<>();
            long token = report.run("monday", () -> {
                try {
                    duringRun.set(otherInstance.lock("report:monday").tryAcquire(Duration.ZERO));
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            });

            assertThat(token).isPositive();
            assertThat(duringRun.get()).as("the other instance's attempt while the report ran").isEmpty();
            try (Lease after = otherInstance
                    .lock("report:monday")
                    .tryAcquire(Duration.ofSeconds(5))
                    .orElseThrow()) {
                assertThat(after.fencingToken()).isGreaterThan(token);
            }
        }
    }
}
