package io.dlock.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.dlock.Lease;
import io.dlock.LockClient;
import io.dlock.testkit.FaultProxy;
import io.dlock.testkit.RedisServer;
import java.time.Duration;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/**
 * A connection that dies without a FIN or RST (the fault proxy's blackhole: bytes vanish, the socket
 * stays open) must not keep the client stuck after the network heals. Lettuce only times the
 * commands out on such a connection; dlock closes it on a timeout so that Lettuce reconnects.
 */
class RedisDeadConnectionIT {

    @Test
    void silentlyDeadConnection_isReplacedAfterACommandTimeout() throws Exception {
        try (RedisServer server = RedisServer.start();
                FaultProxy proxy = FaultProxy.start(server.port());
                LockClient client = LockClient.connect(
                        "redis://" + proxy.connectString() + "?keyPrefix=dead&connectTimeout=1s&leaseTime=5s")) {
            RedisTestSupport.markContinuous(server, "dead");
            try (Lease first = client.lock("stuck").acquire()) {
                assertThat(first.isValid()).isTrue();
            }
            long accepted = proxy.acceptedConnections();

            proxy.blackhole(FaultProxy.Direction.BOTH);
            // The request vanishes: no grant while partitioned (empty, or the backend's failure).
            Optional<Lease> during = tryOnce(client);
            assertThat(during).isEmpty();
            proxy.pass();

            // The old connection stays silent for good (a TCP stream cannot skip lost bytes), so only a
            // new connection can work: the lock must become usable again within a few command timeouts.
            await().atMost(RedisTestSupport.scaled(15))
                    .pollInterval(Duration.ofMillis(200))
                    .until(() -> tryOnce(client)
                            .map(l -> {
                                l.close();
                                return true;
                            })
                            .orElse(false));
            assertThat(proxy.acceptedConnections())
                    .as("connections made after the fault")
                    .isGreaterThan(accepted);
            await().atMost(RedisTestSupport.scaled(10))
                    .until(() -> RedisTestSupport.lockKeys(server, "dead:*").isEmpty());
        }
    }

    private static Optional<Lease> tryOnce(LockClient client) throws InterruptedException {
        try {
            return client.lock("stuck").tryAcquire(Duration.ofMillis(1500));
        } catch (io.dlock.LockBackendException e) {
            return Optional.empty();
        }
    }
}
