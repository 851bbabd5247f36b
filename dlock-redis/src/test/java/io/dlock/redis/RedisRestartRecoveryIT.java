package io.dlock.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.dlock.Lease;
import io.dlock.LockBackendException;
import io.dlock.LockClient;
import io.dlock.testkit.RedisServer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * Issue 17's recovery bound on a real redis-server without persistence, killed and restarted
 * several times in close succession: the lock is granted again within the last restart's downtime
 * + the lease time + 1 s of its kill, and not before a lease time after the server came back with
 * its data gone (the data-loss fence, which keeps a holder that missed the loss from overlapping).
 * The clients use the default retry policy (doubling up to 5 s); their reconnect attempts are
 * capped at 250 ms apart ({@code RedisConnector.RECONNECT_MAX_DELAY}).
 *
 * <p>The bound is part of the safety contract (a lock that never comes back is unsafe too), not a
 * speed claim: the 1 s is slack for reconnecting (at most 250 ms apart) and waking the waiter.
 */
class RedisRestartRecoveryIT {

    private static final Duration LEASE = Duration.ofSeconds(3);

    /**
     * A kill, the restart's launch (before the new process exists, so before its start) and the
     * server's return, as the test saw them (System.nanoTime()).
     */
    private record Bounce(long killedAt, long launchedAt, long servingAt) {
        Duration downtime() {
            return Duration.ofNanos(servingAt - killedAt);
        }
    }

    private record Grant(long at, long token) {}

    @Test
    void threeRestartsCloseTogether_grantedAgainWithinLastDowntimePlusLeasePlusOneSecond_andNotBeforeTheFence()
            throws Exception {
        String query = "&leaseTime=" + LEASE.toSeconds() + "s";
        try (RedisServer server = RedisServer.builder().persistence(false).start();
                LockClient holder = LockClient.connect(server.uri("chain") + query);
                LockClient waiter = LockClient.connect(server.uri("chain") + query)) {
            RedisTestSupport.markContinuous(server, "chain");
            Lease old = holder.lock("x").acquire();
            AtomicInteger lostCalls = new AtomicInteger();
            old.onLost(e -> lostCalls.incrementAndGet());

            AtomicBoolean stop = new AtomicBoolean();
            AtomicInteger attempts = new AtomicInteger();
            CompletableFuture<Grant> granted = CompletableFuture.supplyAsync(() -> {
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
                while (!stop.get() && System.nanoTime() - deadline < 0) {
                    attempts.incrementAndGet();
                    try {
                        var got = waiter.lock("x").tryAcquire(Duration.ofMillis(500));
                        if (got.isPresent()) {
                            long at = System.nanoTime();
                            try (Lease next = got.get()) {
                                return new Grant(at, next.fencingToken());
                            }
                        }
                    } catch (LockBackendException e) {
                        // the server is down or the wait was cut by the restart: try again at once
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                        throw new IllegalStateException(e);
                    }
                }
                throw new AssertionError("the waiter was never granted the lock");
            });
            try {
                await().atMost(Duration.ofSeconds(10)).until(() -> attempts.get() >= 3);
                assertThat(granted).isNotDone();

                // Down 1.0, 1.5 and 3.5 s (the default back-off would reconnect 2.8 s late after the last); the first
                // two serving windows (1 s) are shorter than the
                // lease, so the fence of each restart is cut short by the next kill.
                List<Bounce> bounces = new ArrayList<>();
                long[] downMs = {1000, 1500, 3500};
                for (int i = 0; i < downMs.length; i++) {
                    long killedAt = System.nanoTime();
                    server.kill();
                    Thread.sleep(downMs[i]); // the fault's schedule, not a wait for a condition
                    long launchedAt = System.nanoTime();
                    server.restart();
                    bounces.add(new Bounce(killedAt, launchedAt, System.nanoTime()));
                    if (i < downMs.length - 1) {
                        Thread.sleep(1000); // the serving window before the next kill (schedule)
                        assertThat(granted)
                                .as("granted in serving window %d, inside the fence", i)
                                .isNotDone();
                    }
                }

                Grant grant = granted.get(30, TimeUnit.SECONDS);
                Bounce last = bounces.get(bounces.size() - 1);
                Duration sinceKill = Duration.ofNanos(grant.at() - last.killedAt());
                Duration bound = last.downtime().plus(LEASE).plusSeconds(1);
                assertThat(sinceKill)
                        .as(
                                "granted %d ms after the last kill (down %d ms)",
                                sinceKill.toMillis(), last.downtime().toMillis())
                        .isLessThanOrEqualTo(bound);
                // The fence: nothing granted within a lease time of the server's start without its data
                // (the launch is a lower bound of the start; the script reads the start from a
                // whole-second uptime, which an estimate must never take as earlier than it was).
                assertThat(Duration.ofNanos(grant.at() - last.launchedAt()))
                        .as(
                                "granted %d ms after the restart's launch",
                                Duration.ofNanos(grant.at() - last.launchedAt()).toMillis())
                        .isGreaterThanOrEqualTo(LEASE);
                assertThat(grant.token()).isGreaterThan(old.fencingToken());
            } finally {
                stop.set(true);
            }
            await().atMost(Duration.ofSeconds(10)).until(() -> lostCalls.get() == 1);
            assertThat(old.isValid()).isFalse();
            old.close();
            await().atMost(Duration.ofSeconds(10))
                    .until(() -> RedisTestSupport.lockKeys(server, "chain:*").isEmpty());
            assertThat(lostCalls).hasValue(1);
        }
    }
}
