package io.dlock.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.dlock.Lease;
import io.dlock.LockClient;
import io.dlock.LockLostException;
import io.dlock.LockOptions;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/**
 * The stall detector alone, and through the engine: a fake ticker that jumps forward stands for a
 * GC pause or SIGSTOP during which the server may have expired the session.
 */
class StallDetectorTest {
    private static final Duration BOUND = Duration.ofSeconds(10);

    private final AtomicLong now = new AtomicLong(5_000_000_000L);
    private final List<Duration> stalls = new CopyOnWriteArrayList<>();

    private void advance(Duration d) {
        now.addAndGet(d.toNanos());
    }

    // ---- the detector alone

    @Test
    void check_gapLongerThanBound_reportsStallOnce() {
        StallDetector detector = new StallDetector(now::get, BOUND, stalls::add);

        advance(Duration.ofSeconds(11));
        detector.check();
        detector.check();

        assertThat(stalls).containsExactly(Duration.ofSeconds(11));
    }

    @Test
    void check_gapShorterThanBound_reportsNothing() {
        StallDetector detector = new StallDetector(now::get, BOUND, stalls::add);

        advance(Duration.ofSeconds(9));
        detector.check();
        advance(Duration.ofSeconds(9)); // the JVM was seen running in between: no accumulation
        detector.check();
        advance(BOUND); // exactly the bound is still safe
        detector.check();

        assertThat(stalls).isEmpty();
    }

    @Test
    void check_secondStallAfterFirst_reportsEach() {
        StallDetector detector = new StallDetector(now::get, BOUND, stalls::add);

        advance(Duration.ofSeconds(12));
        detector.check();
        advance(Duration.ofSeconds(1));
        detector.check();
        advance(Duration.ofSeconds(20));
        detector.check();

        assertThat(stalls).containsExactly(Duration.ofSeconds(12), Duration.ofSeconds(20));
    }

    @Test
    void check_manyThreadsAfterOneStall_reportsOnce() throws Exception {
        StallDetector detector = new StallDetector(now::get, BOUND, stalls::add);
        advance(Duration.ofSeconds(30));
        CountDownLatch go = new CountDownLatch(1);
        List<CompletableFuture<Void>> checks = new CopyOnWriteArrayList<>();
        for (int i = 0; i < 8; i++) {
            checks.add(CompletableFuture.runAsync(() -> {
                try {
                    go.await();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
                detector.check();
            }));
        }

        go.countDown();
        CompletableFuture.allOf(checks.toArray(new CompletableFuture<?>[0])).get(5, TimeUnit.SECONDS);

        assertThat(stalls).containsExactly(Duration.ofSeconds(30));
    }

    @Test
    void start_timerTicksAfterStall_reportsWithoutAnyCaller() {
        StallDetector detector = new StallDetector(now::get, Duration.ofMillis(100), stalls::add);
        ScheduledExecutorService timer = Executors.newSingleThreadScheduledExecutor();
        try {
            detector.start(timer);

            advance(Duration.ofSeconds(1));

            await().atMost(Duration.ofSeconds(5)).until(() -> stalls.size() == 1);
            assertThat(stalls.get(0)).isGreaterThanOrEqualTo(Duration.ofSeconds(1));
        } finally {
            timer.shutdownNow();
        }
    }

    /**
     * {@link Acquisition#isValid()} relies on this: once {@code check()} returns, every stall seen
     * so far has been acted on. Here thread 1 has detected a stall and is still reporting it; a
     * concurrent {@code check()} from a resuming user thread must not return "all fine" before the
     * report (which invalidates the leases) is done, or that thread reads its lease as valid.
     */
    @Test
    void check_whileAnotherThreadIsReportingStall_returnsOnlyAfterReport() throws Exception {
        CountDownLatch reporting = new CountDownLatch(1);
        CountDownLatch finishReport = new CountDownLatch(1);
        AtomicBoolean reported = new AtomicBoolean();
        StallDetector detector = new StallDetector(now::get, BOUND, stall -> {
            reporting.countDown();
            try {
                finishReport.await(5, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            reported.set(true);
        });
        advance(Duration.ofSeconds(11));
        Thread first = new Thread(detector::check, "stall-reporter");
        first.start();
        assertThat(reporting.await(5, TimeUnit.SECONDS)).isTrue();
        AtomicBoolean sawReported = new AtomicBoolean();
        Thread second = new Thread(
                () -> {
                    detector.check();
                    sawReported.set(reported.get());
                },
                "resuming-user");

        second.start();
        await().atMost(Duration.ofSeconds(5))
                .until(() -> second.getState() != Thread.State.RUNNABLE && second.getState() != Thread.State.NEW);
        finishReport.countDown();
        second.join(5_000);
        first.join(5_000);

        assertThat(sawReported)
                .as("check() returned while the stall was still being reported")
                .isTrue();
    }

    // ---- through the engine

    private LockClient clientWithFakeTicker(InMemoryBackend backend) {
        return LockEngine.newClient(
                backend,
                LockOptions.builder().ticker(now::get).callbackThreads(1).build());
    }

    @Test
    void isValid_tickerJumpsBeyondMaxSuspension_invalidAndOnLostOnce() throws Exception {
        InMemoryBackend backend = InMemoryBackend.create().maxSuspension(BOUND);
        try (LockClient client = clientWithFakeTicker(backend)) {
            Lease lease = client.lock("orders").acquire();
            List<LockLostException> lost = new CopyOnWriteArrayList<>();
            lease.onLost(lost::add);

            advance(BOUND.plusSeconds(1)); // the JVM "stopped" for 11 s

            assertThat(lease.isValid()).isFalse();
            await().atMost(Duration.ofSeconds(5)).until(() -> lost.size() == 1);
            assertThat(lease.isValid()).isFalse();
            advance(BOUND.plusSeconds(1));
            assertThat(lease.isValid()).isFalse();
            ((EngineClient) client).callbacks.submit(() -> {}).get(5, TimeUnit.SECONDS);
            assertThat(lost).hasSize(1);
            assertThat(lost.get(0)).hasMessageContaining("stalled").hasMessageContaining("lock 'orders'");
            assertThat(client.lock("orders").isHeldByCurrentThread()).isFalse();
            lease.close();
        }
    }

    @Test
    void isValid_tickerAdvancesLessThanMaxSuspension_staysValid() throws Exception {
        InMemoryBackend backend = InMemoryBackend.create().maxSuspension(BOUND);
        try (LockClient client = clientWithFakeTicker(backend)) {
            Lease lease = client.lock("orders").acquire();
            AtomicInteger lost = new AtomicInteger();
            lease.onLost(e -> lost.incrementAndGet());

            advance(BOUND.minusSeconds(1));
            assertThat(lease.isValid()).isTrue();
            advance(BOUND.minusSeconds(1));
            assertThat(lease.isValid()).isTrue();

            ((EngineClient) client).callbacks.submit(() -> {}).get(5, TimeUnit.SECONDS);
            assertThat(lost).hasValue(0);
            lease.close();
            assertThat(backend.queue("orders")).isEmpty();
        }
    }

    @Test
    void isHeldByCurrentThread_afterStall_false() throws Exception {
        InMemoryBackend backend = InMemoryBackend.create().maxSuspension(BOUND);
        try (LockClient client = clientWithFakeTicker(backend)) {
            Lease lease = client.lock("orders").acquire();

            advance(Duration.ofMinutes(1));

            assertThat(client.lock("orders").isHeldByCurrentThread()).isFalse();
            assertThat(lease.isValid()).isFalse();
            // A fresh acquisition after the stall gets a new grant with a higher token.
            try (Lease again =
                    client.lock("orders").tryAcquire(Duration.ofSeconds(5)).orElseThrow()) {
                assertThat(again.fencingToken()).isGreaterThan(lease.fencingToken());
            }
        }
    }

    @Test
    void isValid_grantPastItsValidUntil_false() throws Exception {
        InMemoryBackend.Server server = new InMemoryBackend.Server();
        server.grantLifetime(now::get, Duration.ofSeconds(3));
        try (LockClient client = clientWithFakeTicker(server.connect().maxSuspension(BOUND))) {
            Lease lease = client.lock("orders").acquire();

            advance(Duration.ofSeconds(2));
            assertThat(lease.isValid()).isTrue();
            advance(Duration.ofSeconds(2));
            assertThat(lease.isValid()).isFalse();
            lease.close();
        }
    }
}
