package io.dlock.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.dlock.DistributedLock;
import io.dlock.Lease;
import io.dlock.LockBackendException;
import io.dlock.LockClient;
import io.dlock.testkit.FreePorts;
import io.dlock.testkit.RedisServer;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** Connecting, configuration, bad input, credentials, and what is left on the server. */
class RedisClientIT extends RedisTestSupport {

    @ParameterizedTest
    @ValueSource(strings = {"", ".", "..", "a/b", "with space", "br{ace}", "new\nline", "ü"})
    void lock_badName_throwsAndCreatesNothing(String name) {
        LockClient client = client();
        assertThatThrownBy(() -> client.lock(name))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("lock name");
        assertThat(keys()).isEmpty();
    }

    @Test
    void tryAcquire_negativeWait_throwsAndCreatesNothing() throws Exception {
        LockClient client = client();
        DistributedLock lock = client.lock("negative");
        assertThatThrownBy(() -> lock.tryAcquire(Duration.ofMillis(-1)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("negative");
        assertThatThrownBy(() -> lock.acquireAsync(Duration.ofSeconds(-5)))
                .isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> client.semaphore("negative", 0)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> client.semaphore("negative", 2).acquire(3))
                .isInstanceOf(IllegalArgumentException.class);
        assertThat(keys()).isEmpty();
        assertThat(lock.isHeldByCurrentThread()).isFalse();
    }

    @Test
    void connect_badUriParameters_throwNamingTheParameter() {
        assertThatThrownBy(() -> LockClient.connect(uri("colour=blue")))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("'colour'")
                .hasMessageContaining("keyPrefix");
        assertThatThrownBy(() -> LockClient.connect(uri("leaseTime=soon")))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("'leaseTime'");
        assertThatThrownBy(() -> LockClient.connect(uri("fair=maybe")))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("'fair'");
        assertThatThrownBy(() -> LockClient.connect("redis://127.0.0.1:99999"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("port");
        assertThatThrownBy(() -> LockClient.connect("redis://127.0.0.1:6379/notadb"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("database");
        assertThatThrownBy(() -> LockClient.connect("redis://127.0.0.1:6379?keyPrefix=a%7Bb"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("keyPrefix");
        assertThatThrownBy(() -> LockClient.connect("redis://h1:6379,h2:6379"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("redis-cluster://");
        assertThatThrownBy(() -> LockClient.connect("redis-sentinel://127.0.0.1:26379"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("'master'");
        assertThatThrownBy(() -> LockClient.connect("redis-cluster://127.0.0.1:7000/3"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("database 0");
        assertThatThrownBy(() -> LockClient.connect("redis://127.0.0.1:6379?verifyPeer=sometimes"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("'verifyPeer'");
        assertThatThrownBy(() -> LockClient.connect("redis://alice@127.0.0.1:6379"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("no password");
        assertThatThrownBy(() -> LockClient.connect("redis:///"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("no host");
    }

    @Test
    void connect_unreachableServer_throwsBackendExceptionWithinConnectTimeout() {
        int port = FreePorts.loopback(); // nothing listens there
        long start = System.nanoTime();
        assertThatThrownBy(() -> LockClient.connect("redis://127.0.0.1:" + port + "?connectTimeout=1s"))
                .isInstanceOf(LockBackendException.class)
                .hasMessageContaining("redis")
                .hasMessageContaining("127.0.0.1:" + port);
        assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start))
                .isLessThan(scaled(8).toMillis());
    }

    @Test
    void connect_aclUser_worksAndWrongPasswordIsRefused() throws Exception {
        try (RedisServer secured = RedisServer.builder()
                .config("user default on >defaultpw ~* &* +@all")
                .config("user alice on >s3cret ~" + prefix + ":* &" + prefix + ":c:* +@all")
                .config("user mallory on >guess ~other:* &other:* +@all")
                .probePassword("defaultpw")
                .start()) {
            markContinuous(secured, prefix);
            String base = "127.0.0.1:" + secured.port() + "?keyPrefix=" + prefix;
            try (LockClient alice = LockClient.connect("redis://alice:s3cret@" + base);
                    LockClient alice2 = LockClient.connect("redis://alice:s3cret@" + base)) {
                try (Lease lease = alice.lock("secured").acquire()) {
                    assertThat(alice2.lock("secured").tryAcquire(Duration.ZERO)).isEmpty();
                    assertThat(lease.isValid()).isTrue();
                }
                assertThat(alice2.lock("secured").tryAcquire(Duration.ZERO)).isPresent();
            }
            assertThatThrownBy(() -> LockClient.connect("redis://alice:wrong@" + base))
                    .isInstanceOf(LockBackendException.class)
                    .hasMessageContaining("authentication refused for user 'alice'")
                    .hasMessageNotContaining("wrong");
            // A user without access to the key prefix: refused at the first lock operation, clearly.
            try (LockClient mallory = LockClient.connect("redis://mallory:guess@" + base)) {
                assertThatThrownBy(() -> mallory.lock("secured").tryAcquire(Duration.ZERO))
                        .isInstanceOf(LockBackendException.class)
                        .hasMessageContaining("lock 'secured' on redis")
                        .hasMessageContaining("NOPERM");
            } catch (LockBackendException e) {
                // Or already at connect, when its channel is not allowed: also clear.
                assertThat(e).hasMessageContaining("permission");
            }
            assertThat(lockKeys(secured, "*")).isEmpty();
        }
    }

    @Test
    void connect_passwordOnly_andDatabase_areUsed() throws Exception {
        try (RedisServer secured = RedisServer.builder()
                .config("requirepass pw+with/odd@chars")
                .probePassword("pw+with/odd@chars")
                .start()) {
            markContinuous(secured, prefix, 5);
            String uri = "redis://:pw%2Bwith%2Fodd%40chars@127.0.0.1:" + secured.port() + "/5?keyPrefix=" + prefix;
            try (LockClient client = LockClient.connect(uri)) {
                try (Lease lease = client.lock("db5").acquire()) {
                    assertThat(secured.command("SELECT", "5")).isEqualTo("OK");
                    assertThat(lease.fencingToken()).isPositive();
                }
            }
            assertThatThrownBy(() -> LockClient.connect("redis://127.0.0.1:" + secured.port() + "?connectTimeout=2s"))
                    .isInstanceOf(LockBackendException.class)
                    .hasMessageContaining("authentication");
        }
    }

    @Test
    void keyPrefix_separatesLocksOfTheSameName() throws Exception {
        LockClient a = client();
        markContinuous(server, prefix + "-other");
        try (LockClient b = LockClient.connect(server.uri(prefix + "-other"))) {
            try (Lease one = a.lock("same").acquire();
                    Lease two = b.lock("same").tryAcquire(Duration.ZERO).orElseThrow()) {
                assertThat(one.isValid()).isTrue();
                assertThat(two.isValid()).isTrue();
            }
        }
    }
}
