package io.dlock.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.dlock.Lease;
import io.dlock.LockBackendException;
import io.dlock.LockClient;
import io.dlock.LockOptions;
import io.dlock.testkit.Contention;
import io.dlock.testkit.FaultProxy;
import io.dlock.testkit.FreePorts;
import io.lettuce.core.ClientOptions;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.SocketOptions;
import io.lettuce.core.api.StatefulRedisConnection;
import java.time.Duration;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** {@link RedisLocks}: dlock over a Lettuce client the application made and keeps. */
class RedisHandInIT extends RedisTestSupport {
    private RedisClient redis;

    @BeforeEach
    void userClient() {
        redis = RedisClient.create();
        redis.setOptions(ClientOptions.builder()
                .socketOptions(SocketOptions.builder()
                        .connectTimeout(Duration.ofSeconds(2))
                        .build())
                .build());
    }

    @AfterEach
    void shutdownUserClient() {
        redis.shutdown(Duration.ZERO, Duration.ofSeconds(2));
    }

    private RedisURI target() {
        RedisURI uri = RedisURI.create("redis://127.0.0.1:" + server.port());
        uri.setClientName("handed");
        return uri;
    }

    @Test
    void handedInClient_excludesAgainstAUriClient_andStaysUsableAfterClose() throws Exception {
        LockClient mine = track(RedisLocks.connect(redis, target(), prefix, LockOptions.defaults()));
        LockClient other = client();
        Contention.Result r = Contention.run(new LockClient[] {mine, other}, "shared", 4, 100, scaled(120));
        assertThat(r.checker().counter()).isEqualTo(400);
        assertThat(r.checker().violations()).isZero();
        assertThat(r.store().rejectedWrites()).isZero();
        assertThat(handedConnections()).isEqualTo(2); // dlock's command and pub/sub connections

        try (StatefulRedisConnection<String, String> own = redis.connect(target())) {
            mine.close();
            // dlock closed its own connections only: the application's client and connection still work.
            assertThat(own.sync().ping()).isEqualTo("PONG");
            try (StatefulRedisConnection<String, String> fresh = redis.connect(target())) {
                assertThat(fresh.sync().ping()).isEqualTo("PONG");
            }
        }
        await().atMost(scaled(5)).until(() -> handedConnections() == 0);
    }

    @Test
    void handedInClient_usersOwnConnectionDropping_doesNotSuspendDlock() throws Exception {
        LockClient mine = track(RedisLocks.connect(
                redis,
                target(),
                prefix,
                LockOptions.builder().leaseTime(Duration.ofMillis(900)).build()));
        Lease lease = mine.lock("steady").acquire();
        try (FaultProxy proxy = FaultProxy.start(server.port());
                StatefulRedisConnection<String, String> own =
                        redis.connect(RedisURI.create("redis://" + proxy.connectString()))) {
            assertThat(own.sync().ping()).isEqualTo("PONG");
            proxy.close(); // the application's connection drops and cannot come back
            await().atMost(scaled(5)).until(() -> proxy.openConnections() == 0);
            // Were it taken for dlock's own, the lease would be declared lost after leaseTime / 3 (300 ms).
            await().during(Duration.ofMillis(1500)).atMost(scaled(5)).until(lease::isValid);
        }
        lease.close();
    }

    @Test
    void badKeyPrefix_refusedBeforeAnythingOpens() {
        assertThatThrownBy(() -> RedisLocks.connect(redis, target(), "has space", LockOptions.defaults()))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("'keyPrefix'");
        await().during(Duration.ofMillis(300)).atMost(scaled(5)).until(() -> handedConnections() == 0);
    }

    @Test
    void unreachableTarget_failsWithBackendExceptionAndLeavesTheClientUsable() {
        RedisURI nowhere = RedisURI.create("redis://127.0.0.1:" + FreePorts.loopback());
        assertThatThrownBy(() -> RedisLocks.connect(redis, nowhere, prefix, LockOptions.defaults()))
                .isInstanceOf(LockBackendException.class)
                .hasMessageContaining("cannot connect to 127.0.0.1:");
        try (StatefulRedisConnection<String, String> own = redis.connect(target())) {
            assertThat(own.sync().ping()).isEqualTo("PONG");
        }
    }

    @Test
    void nullArguments_areRefused() {
        assertThatThrownBy(() -> RedisLocks.connect(null, target(), LockOptions.defaults()))
                .isInstanceOf(NullPointerException.class)
                .hasMessageContaining("client");
        assertThatThrownBy(() -> RedisLocks.connect(redis, null, LockOptions.defaults()))
                .isInstanceOf(NullPointerException.class)
                .hasMessageContaining("target");
    }

    /** Connections opened through the handed-in client with {@link #target()}. */
    private static long handedConnections() {
        return ((String) server.command("CLIENT", "LIST"))
                .lines()
                .filter(l -> l.contains(" name=handed "))
                .count();
    }
}
