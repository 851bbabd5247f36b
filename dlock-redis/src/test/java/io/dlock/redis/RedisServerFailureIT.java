package io.dlock.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.dlock.Lease;
import io.dlock.LockClient;
import io.dlock.LockLostException;
import io.dlock.testkit.RedisServer;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** What a lease does when the Redis server goes away and comes back, with and without its data. */
class RedisServerFailureIT {

    @Test
    void serverRestart_withPersistence_keepsLease() throws Exception {
        try (RedisServer server = RedisServer.start();
                LockClient holder = LockClient.connect(server.uri("f") + "&leaseTime=20s");
                LockClient other = LockClient.connect(server.uri("f") + "&leaseTime=20s")) {
            RedisTestSupport.markContinuous(server, "f");
            Lease lease = holder.lock("kept").acquire();
            AtomicInteger lost = new AtomicInteger();
            lease.onLost(e -> lost.incrementAndGet());
            server.restart();
            await().atMost(RedisTestSupport.scaled(15))
                    .ignoreExceptions()
                    .until(() -> other.lock("kept").tryAcquire(Duration.ZERO).isEmpty());
            assertThat(lease.isValid()).isTrue();
            assertThat(lost).hasValue(0);
            lease.close();
            try (Lease next =
                    other.lock("kept").tryAcquire(Duration.ofSeconds(10)).orElseThrow()) {
                assertThat(next.fencingToken()).isGreaterThan(lease.fencingToken());
            }
        }
    }

    @Test
    void serverRestart_losingItsData_invalidatesLeaseAndFiresOnLostOnce() throws Exception {
        try (RedisServer server = RedisServer.builder().persistence(false).start();
                LockClient holder = LockClient.connect(server.uri("f") + "&leaseTime=6s");
                LockClient other = LockClient.connect(server.uri("f") + "&leaseTime=6s")) {
            RedisTestSupport.markContinuous(server, "f");
            Lease lease = holder.lock("forgotten").acquire();
            AtomicInteger lostCalls = new AtomicInteger();
            lease.onLost(e -> lostCalls.incrementAndGet());
            server.restart(); // comes back empty, as after a crash without persistence
            await().atMost(RedisTestSupport.scaled(15)).until(() -> !lease.isValid());
            await().atMost(RedisTestSupport.scaled(5)).until(() -> lostCalls.get() == 1);
            assertThatThrownBy(lease::checkValid)
                    .isInstanceOf(LockLostException.class)
                    .hasMessageContaining("forgotten");
            // The lock is free on the new server once its epoch fence (a lease time) has passed, and its
            // tokens still exceed the old one's.
            try (Lease next = other.lock("forgotten")
                    .tryAcquire(RedisTestSupport.scaled(20))
                    .orElseThrow()) {
                assertThat(next.fencingToken()).isGreaterThan(lease.fencingToken());
            }
            lease.close(); // closing a lost lease is harmless
            assertThat(lostCalls).hasValue(1);
            // The client recovers for new acquisitions.
            try (Lease again =
                    holder.lock("forgotten").tryAcquire(Duration.ofSeconds(10)).orElseThrow()) {
                assertThat(again.isValid()).isTrue();
            }
        }
    }

    @Test
    void serverDown_acquireFailsWithBackendExceptionAndLeavesNothing() throws Exception {
        try (RedisServer server = RedisServer.start();
                LockClient client = LockClient.connect(server.uri("f") + "&connectTimeout=1s&retryMaxRetries=1")) {
            RedisTestSupport.markContinuous(server, "f");
            server.kill();
            // Unreachable is not busy: a short wait fails as a backend failure (never an empty
            // Optional, which means someone else holds the lock); a long one outlasts the enqueue's
            // retries, which then report the backend failure instead of waiting on.
            assertThatThrownBy(() -> client.lock("down").tryAcquire(Duration.ofMillis(200)))
                    .isInstanceOf(io.dlock.LockBackendException.class)
                    .hasMessageContaining("lock 'down' on redis");
            assertThatThrownBy(() -> client.lock("down")
                            .acquireAsync(Duration.ofSeconds(60))
                            .get(30, java.util.concurrent.TimeUnit.SECONDS))
                    .isInstanceOf(java.util.concurrent.ExecutionException.class)
                    .cause()
                    .isInstanceOf(io.dlock.LockBackendException.class)
                    .hasMessageContaining("lock 'down' on redis");
            server.restart();
            await().atMost(RedisTestSupport.scaled(15)).ignoreExceptions().until(() -> client.lock("down")
                    .tryAcquire(Duration.ofSeconds(1))
                    .map(l -> {
                        l.close();
                        return true;
                    })
                    .orElse(false));
            assertThat(RedisTestSupport.lockKeys(server, "f:*")).isEmpty();
        }
    }
}
