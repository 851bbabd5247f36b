package io.dlock.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.dlock.Lease;
import io.dlock.LockBackendException;
import io.dlock.LockClient;
import io.dlock.testkit.FaultProxy;
import io.dlock.testkit.RedisServer;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/**
 * A redis-server that restarts without its data (no persistence) under a held lock: the holder's
 * lease is time-based and may stay valid for most of a lease time, so the server must grant nothing
 * until then (the epoch fence, see RedisScripts), however early another client reaches it.
 */
class RedisDataLossIT {

    /** What the retrying client saw when it was granted, before it closed the lease. */
    private record Granted(long callStart, long token, boolean valid, boolean oldValid) {}

    /**
     * The holder reaches the server through a proxy that goes silent during the restart, as a
     * holder whose reconnect backs off or whose network is slow: it cannot learn of the restart and
     * keeps its lease until its renewals fail. Another client retries {@code tryAcquire} the whole
     * time, directly. Sampled continuously: the holder's lease was last seen valid before the
     * attempt that was granted began, and the new token is higher.
     */
    @Test
    void restartWithoutPersistence_otherClientRetrying_noGrantWhileOldLeaseIsValid() throws Exception {
        // leaseTime / 3 = 3 s: the holder, cut off, keeps its lease that long after the drop, while the
        // other client reconnects within a few of its 100-200 ms back-off steps.
        String query = "?keyPrefix=loss&leaseTime=9s&connectTimeout=2s&retryMaxSleep=200ms";
        try (RedisServer server = RedisServer.builder().persistence(false).start();
                FaultProxy proxy = FaultProxy.start(server.port());
                LockClient holder = LockClient.connect("redis://" + proxy.connectString() + query);
                LockClient other = LockClient.connect("redis://" + server.connectString() + query)) {
            RedisTestSupport.markContinuous(server, "loss");
            Lease old = holder.lock("x").acquire();
            AtomicInteger lostCalls = new AtomicInteger();
            old.onLost(e -> lostCalls.incrementAndGet());

            AtomicBoolean stop = new AtomicBoolean();
            AtomicLong lastValid = new AtomicLong(); // System.nanoTime() just after a sample found it valid
            AtomicLong samples = new AtomicLong();
            Thread sampler = new Thread(
                    () -> {
                        while (!stop.get()) {
                            boolean valid = old.isValid();
                            long after = System.nanoTime();
                            if (valid) {
                                lastValid.set(after);
                            }
                            samples.incrementAndGet();
                            Thread.onSpinWait();
                        }
                    },
                    "old-lease-sampler");
            sampler.start();

            AtomicInteger attempts = new AtomicInteger();
            long deadline = System.nanoTime() + RedisTestSupport.scaled(60).toNanos();
            // The lease belongs to the retrying thread, which reports on it and closes it.
            CompletableFuture<Granted> retrying = CompletableFuture.supplyAsync(() -> {
                while (System.nanoTime() - deadline < 0) {
                    long start = System.nanoTime();
                    try {
                        var got = other.lock("x").tryAcquire(Duration.ZERO);
                        attempts.incrementAndGet();
                        if (got.isPresent()) {
                            try (Lease next = got.get()) {
                                return new Granted(start, next.fencingToken(), next.isValid(), old.isValid());
                            }
                        }
                    } catch (LockBackendException e) {
                        attempts.incrementAndGet(); // the server is down: keep trying
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                        throw new IllegalStateException(e);
                    }
                    try {
                        Thread.sleep(2); // pacing between attempts, not a wait for a condition
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                        throw new IllegalStateException(e);
                    }
                }
                throw new AssertionError("the other client was never granted the lock");
            });
            try {
                await().atMost(RedisTestSupport.scaled(10)).until(() -> attempts.get() >= 5);
                assertThat(retrying).isNotDone();

                proxy.blackhole(FaultProxy.Direction.BOTH);
                long restartedAt = System.nanoTime();
                server.restart(); // comes back empty

                Granted next = retrying.get(RedisTestSupport.scaled(60).toSeconds(), TimeUnit.SECONDS);
                long overlapMs = TimeUnit.NANOSECONDS.toMillis(lastValid.get() - next.callStart());
                assertThat(lastValid.get() - next.callStart())
                        .as("the old lease was still valid (at least) %d ms after the granted attempt began", overlapMs)
                        .isNegative();
                assertThat(next.oldValid()).isFalse();
                assertThat(old.isValid()).isFalse();
                assertThat(next.valid()).isTrue();
                assertThat(next.token()).isGreaterThan(old.fencingToken());
                // Granted only after the fence: a lease time after the restart, not at once.
                assertThat(Duration.ofNanos(next.callStart() - restartedAt)).isGreaterThan(Duration.ofSeconds(8));
                assertThat(samples.get()).isGreaterThan(1000);
            } finally {
                stop.set(true);
                sampler.join();
                proxy.pass();
            }
            await().atMost(RedisTestSupport.scaled(10)).until(() -> lostCalls.get() == 1);
            old.close();
            await().atMost(RedisTestSupport.scaled(10))
                    .until(() -> RedisTestSupport.lockKeys(server, "loss:*").isEmpty());
            assertThat(lostCalls).hasValue(1);
        }
    }

    /**
     * A fresh server first reached 4 s after it started: nothing it may have lost can outlive its
     * start by more than a lease, so the fence ends a lease after the start (read from an uptime in
     * whole seconds that may be almost a second too high, so the script takes one second off: up to
     * 2 s later), not a lease after the first client noticed.
     */
    @Test
    void freshServerReachedLate_fenceEndsALeaseAfterTheServerStarted() throws Exception {
        try (RedisServer server = RedisServer.builder().persistence(false).start()) {
            long started = System.nanoTime(); // the server started a little before this
            Thread.sleep(4_000);
            try (LockClient c = LockClient.connect(server.uri("late") + "&leaseTime=8s")) {
                Optional<Lease> l = c.lock("x").tryAcquire(RedisTestSupport.scaled(20));
                long grantedAfterMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started);
                assertThat(l).isPresent();
                l.get().close();
                // From the first notice it would have been 4 s + 8 s.
                assertThat(grantedAfterMs).isBetween(7_000L, 10_500L);
            }
        }
    }

    /**
     * A holder that reconnects soon after the restart learns of it from its check of its grants
     * (all gone) and turns its lease invalid at once, well before the suspension bound ({@code
     * leaseTime / 3} = 5 s) would have; the other client is still fenced then.
     */
    @Test
    void restartWithoutPersistence_holderReconnects_leaseInvalidAtItsCheck() throws Exception {
        String query = "&leaseTime=15s&retryMaxSleep=200ms";
        try (RedisServer server = RedisServer.builder().persistence(false).start();
                LockClient holder = LockClient.connect(server.uri("early") + query);
                LockClient other = LockClient.connect(server.uri("early") + query)) {
            RedisTestSupport.markContinuous(server, "early");
            Lease old = holder.lock("x").acquire();
            long start = System.nanoTime();
            server.restart();
            // Fenced, and starts the fence, once the client is back: until then a zero wait on a
            // connection known to be down is a backend failure.
            await().atMost(RedisTestSupport.scaled(10))
                    .ignoreException(io.dlock.LockBackendException.class)
                    .until(() -> other.lock("x").tryAcquire(Duration.ZERO).isEmpty());
            await().atMost(RedisTestSupport.scaled(10)).until(() -> !old.isValid());
            assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofMillis(4000));
            assertThat(other.lock("x").tryAcquire(Duration.ZERO)).isEmpty(); // still fenced
            old.close();
            try (Lease next =
                    other.lock("x").tryAcquire(RedisTestSupport.scaled(30)).orElseThrow()) {
                assertThat(next.fencingToken()).isGreaterThan(old.fencingToken());
                assertThat(Duration.ofNanos(System.nanoTime() - start)).isGreaterThan(Duration.ofSeconds(14));
            }
            assertThat(RedisTestSupport.lockKeys(server, "early:*")).isEmpty();
        }
    }
}
