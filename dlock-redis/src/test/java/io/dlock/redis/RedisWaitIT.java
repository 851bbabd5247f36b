package io.dlock.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.dlock.Lease;
import io.dlock.LockBackendException;
import io.dlock.LockClient;
import io.dlock.testkit.RedisServer;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * {@code waitReplicas}: a grant (and each renewal) counts only once that many replicas acknowledged
 * it with Redis {@code WAIT}; otherwise the grant is given back and the acquire fails. One master,
 * one replica.
 */
class RedisWaitIT {
    private static final String PREFIX = "wait";

    private RedisServer master;
    private RedisServer replica;

    @BeforeEach
    void startServers() {
        master = RedisServer.start();
        replica = RedisServer.builder().replicaOf(master).start();
        RedisTestSupport.markContinuous(master, PREFIX);
    }

    @AfterEach
    void stopServers() {
        if (replica != null) {
            replica.resume();
            replica.close();
        }
        if (master != null) {
            master.close();
        }
    }

    private String uri(String query) {
        return master.uri(PREFIX) + "&" + query;
    }

    @Test
    void acquire_withReplicaAcknowledging_isOnTheReplicaWhenGranted() throws Exception {
        try (LockClient client = LockClient.connect(uri("waitReplicas=1&waitTimeout=2s"))) {
            for (int i = 0; i < 20; i++) {
                try (Lease lease = client.lock("replicated").acquire()) {
                    // No waiting here: WAIT returned only after the replica had the grant.
                    assertThat(RedisTestSupport.queue(replica, PREFIX + ":{replicated}:x"))
                            .hasSize(1);
                    assertThat(lease.isValid()).isTrue();
                }
            }
        }
        await().atMost(RedisTestSupport.scaled(5))
                .until(() -> keys(master).isEmpty() && keys(replica).isEmpty());
    }

    @Test
    void acquire_replicaPaused_failsClearlyAndGivesTheGrantBack() throws Exception {
        try (LockClient client = LockClient.connect(uri("waitReplicas=1&waitTimeout=300ms"));
                LockClient other = LockClient.connect(master.uri(PREFIX))) {
            replica.pause();
            assertThatThrownBy(() -> client.lock("unreplicated").tryAcquire(Duration.ofSeconds(5)))
                    .isInstanceOf(LockBackendException.class)
                    .hasMessageContaining("lock 'unreplicated' on redis")
                    .hasMessageContaining("only 0 of 1 replica(s)")
                    .hasMessageContaining("given back");
            // Nothing stays held: a client without waitReplicas gets the lock at once.
            await().atMost(RedisTestSupport.scaled(5)).until(() -> keys(master).isEmpty());
            try (Lease lease =
                    other.lock("unreplicated").tryAcquire(Duration.ZERO).orElseThrow()) {
                assertThat(lease.isValid()).isTrue();
            }
        }
    }

    @Test
    void acquire_moreReplicasThanExist_fails() throws Exception {
        try (LockClient client = LockClient.connect(uri("waitReplicas=2&waitTimeout=200ms"))) {
            assertThatThrownBy(() -> client.lock("two").acquire())
                    .isInstanceOf(LockBackendException.class)
                    .hasMessageContaining("only 1 of 2 replica(s)");
        }
        await().atMost(RedisTestSupport.scaled(5)).until(() -> keys(master).isEmpty());
    }

    @Test
    void renewal_replicaStopsAcknowledging_leaseLostBeforeItExpires() throws Exception {
        try (LockClient client = LockClient.connect(uri("waitReplicas=1&waitTimeout=200ms&leaseTime=1500ms"))) {
            Lease lease = client.lock("renewed").acquire();
            AtomicInteger lost = new AtomicInteger();
            lease.onLost(e -> lost.incrementAndGet());
            // Renewed (and replicated) every 500 ms: still valid after twice the lease.
            await().during(Duration.ofSeconds(3))
                    .atMost(RedisTestSupport.scaled(5))
                    .until(() -> lease.isValid() && lost.get() == 0);

            replica.pause();
            long paused = System.nanoTime();
            await().atMost(RedisTestSupport.scaled(5)).until(() -> lost.get() == 1);
            assertThat(lease.isValid()).isFalse();
            // Last replicated renewal ≤ 500 ms before the pause; its deadline is 1.5 s after it.
            assertThat(Duration.ofNanos(System.nanoTime() - paused)).isLessThan(Duration.ofMillis(1500));
            lease.close();
        }
    }

    private static List<String> keys(RedisServer server) {
        return RedisTestSupport.lockKeys(server, PREFIX + ":*");
    }
}
