package io.dlock.core;

import static org.assertj.core.api.Assertions.assertThat;

import io.dlock.Capability;
import io.dlock.Lease;
import io.dlock.LockClient;
import io.dlock.LockOptions;
import io.dlock.Ticker;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * A multi-lease whose parts were all lost to a stall of the JVM (issue 17: the ZooKeeper torture's
 * multi-lock missed wake-up). Closing it must remove every part's backend entry: the stall was the
 * client's own guess, the server still has the entries, and a part left behind blocks every other
 * client until its owner happens to take that part again.
 */
class LostMultiLeaseTest {
    private static final Duration SUSPENSION = Duration.ofSeconds(1);
    private static final List<String> PARTS = List.of("part-1", "part-2", "part-3");

    private final AtomicLong now = new AtomicLong(1_000_000_000L);
    private final Ticker ticker = now::get;
    private final List<LockClient> clients = new ArrayList<>();
    private InMemoryBackend.Server server;

    @BeforeEach
    void setUp() {
        server = new InMemoryBackend.Server();
    }

    @AfterEach
    void tearDown() {
        clients.forEach(LockClient::close);
    }

    private LockClient open() {
        Set<Capability> caps = EnumSet.copyOf(InMemoryBackend.DEFAULT_CAPABILITIES);
        caps.add(Capability.MULTI_LOCK);
        InMemoryBackend backend = server.connect(Set.copyOf(caps)).maxSuspension(SUSPENSION);
        LockClient c = LockEngine.newClient(
                backend, LockOptions.builder().ticker(ticker).callbackThreads(1).build());
        clients.add(c);
        return c;
    }

    private void stall() {
        now.addAndGet(SUSPENSION.multipliedBy(3).toNanos());
    }

    /**
     * The race the torture hit: the holder thread closes its lease just as the timer thread declares
     * it lost (the stall detector and the renewer run there). Whichever wins, the entry goes.
     */
    @Test
    void close_racingALoss_alwaysRemovesTheEntry() throws Exception {
        LockClient c = open();
        java.util.concurrent.ExecutorService loser = java.util.concurrent.Executors.newSingleThreadExecutor();
        try {
            for (int i = 0; i < 3_000; i++) {
                Lease lease = c.lock("x").tryAcquire(Duration.ofSeconds(5)).orElseThrow();
                Acquisition a = ((EngineLease) lease).acquisition();
                java.util.concurrent.CyclicBarrier start = new java.util.concurrent.CyclicBarrier(2);
                java.util.concurrent.Future<?> lost = loser.submit(() -> {
                    start.await();
                    a.lose(LockMetrics.LossCause.EXPIRED, "lost for the test", null);
                    return null;
                });
                start.await();
                lease.close();
                lost.get();
                assertThat(server.queue("x"))
                        .as("trial " + i + ": the entry is gone")
                        .isEmpty();
            }
        } finally {
            loser.shutdownNow();
        }
    }

    @Test
    void close_afterAStallLostEveryPart_removesEveryPartsEntry() throws Exception {
        LockClient c = open();
        Lease multi = c.multiLock(PARTS).tryAcquire(Duration.ofSeconds(5)).orElseThrow();

        stall();

        assertThat(multi.isValid()).isFalse();
        multi.close();
        assertThat(PARTS)
                .allSatisfy(part -> assertThat(server.queue(part)).as(part).isEmpty());
    }

    /**
     * The torture's case exactly: the holder resumes from the stall and closes before anything has
     * noticed it, so the close itself runs the stall check and finds each part lost halfway through
     * releasing it.
     */
    @Test
    void close_asTheFirstCallAfterAStall_removesEveryPartsEntry() throws Exception {
        LockClient c = open();
        Lease multi = c.multiLock(PARTS).tryAcquire(Duration.ofSeconds(5)).orElseThrow();

        stall();
        multi.close();

        assertThat(PARTS)
                .allSatisfy(part -> assertThat(server.queue(part)).as(part).isEmpty());
        assertThat(multi.isValid()).isFalse();
    }

    @Test
    void close_afterPartsWereReenteredThenLostToAStall_removesEveryPartsEntry() throws Exception {
        LockClient c = open();
        Lease multi = c.multiLock(PARTS).tryAcquire(Duration.ofSeconds(5)).orElseThrow();
        // Each part's own token, as the torture's multi-lock worker reads it: re-enter, read, close.
        for (String part : PARTS) {
            try (Lease p = c.lock(part).tryAcquire(Duration.ZERO).orElseThrow()) {
                assertThat(p.fencingToken()).isPositive();
            }
        }

        stall();

        assertThat(multi.isValid()).isFalse();
        multi.close();
        assertThat(PARTS)
                .allSatisfy(part -> assertThat(server.queue(part)).as(part).isEmpty());
        LockClient other = open();
        for (String part : PARTS) {
            Optional<Lease> taken = other.lock(part).tryAcquire(Duration.ZERO);
            assertThat(taken).as(part + " free for another client").isPresent();
            taken.orElseThrow().close();
        }
    }
}
