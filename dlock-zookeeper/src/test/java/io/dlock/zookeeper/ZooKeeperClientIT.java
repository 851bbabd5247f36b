package io.dlock.zookeeper;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.dlock.DistributedLock;
import io.dlock.Lease;
import io.dlock.LockBackendException;
import io.dlock.LockClient;
import io.dlock.testkit.FreePorts;
import io.dlock.testkit.Timing;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** Connecting, configuration, bad input, credentials, and what is left on the server. */
class ZooKeeperClientIT extends ZooKeeperTestSupport {

    @ParameterizedTest
    @ValueSource(strings = {"", ".", "..", "a/b", "../escape", "with space", "tab\tname", "new\nline", "ü"})
    void lock_badName_throwsAndCreatesNothing(String name) {
        LockClient client = client();
        int before = server.nodeCount();
        assertThatThrownBy(() -> client.lock(name))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("lock name");
        assertThat(server.nodeCount()).isEqualTo(before);
    }

    @Test
    void lock_nameTooLongOrNull_throws() {
        LockClient client = client();
        char[] chars = new char[201];
        Arrays.fill(chars, 'x');
        assertThatThrownBy(() -> client.lock(new String(chars)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("200");
        assertThatThrownBy(() -> client.lock(null))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("null");
        assertThat(client.lock("A-z_0.9:ok").name()).isEqualTo("A-z_0.9:ok");
    }

    @Test
    void tryAcquire_negativeWait_throwsAndCreatesNothing() throws Exception {
        LockClient client = client();
        DistributedLock lock = client.lock("negative");
        int before = server.nodeCount();
        assertThatThrownBy(() -> lock.tryAcquire(Duration.ofMillis(-1)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("negative");
        assertThatThrownBy(() -> lock.acquireAsync(Duration.ofSeconds(-5)))
                .isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> client.withLock("negative", Duration.ofMillis(-1), () -> 1))
                .isInstanceOf(IllegalArgumentException.class);
        assertThat(server.nodeCount()).isEqualTo(before);
        assertThat(lock.isHeldByCurrentThread()).isFalse();
        // java.util.concurrent.locks.Lock treats a negative time as "do not wait", so the view does too.
        assertThat(lock.asJavaLock().tryLock(-1, TimeUnit.SECONDS)).isTrue();
        lock.asJavaLock().unlock();
    }

    @Test
    void connect_badUriParameters_throwNamingTheParameter() {
        assertThatThrownBy(() -> LockClient.connect(uri("colour=blue")))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("'colour'")
                .hasMessageContaining("sessionTimeout");
        assertThatThrownBy(() -> LockClient.connect(uri("sessionTimeout=soon")))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("'sessionTimeout'");
        assertThatThrownBy(() -> LockClient.connect(uri("fair=maybe")))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("'fair'");
        assertThatThrownBy(() -> LockClient.connect("zookeeper://127.0.0.1:99999/ns"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("port");
        assertThatThrownBy(() -> LockClient.connect("zookeeper://127.0.0.1:2181/ns/../up"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("namespace");
        assertThatThrownBy(() -> LockClient.connect("zookeeper:///ns"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("no host");
        assertThatThrownBy(() -> LockClient.connect("redis://127.0.0.1:6379"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("io.dlock:dlock-redis");
    }

    @Test
    void connect_unreachableServer_throwsBackendExceptionWithinConnectTimeout() {
        int port = FreePorts.loopback(); // nothing listens there
        long start = System.nanoTime();
        assertThatThrownBy(() -> LockClient.connect("zookeeper://127.0.0.1:" + port + "/ns?connectTimeout=1s"))
                .isInstanceOf(LockBackendException.class)
                .hasMessageContaining("zookeeper")
                .hasMessageContaining("127.0.0.1:" + port);
        assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start))
                .isLessThan(Timing.scale(Duration.ofSeconds(8)).toMillis());
    }

    @Test
    void digestCredentials_otherUser_isRefusedWithBackendException() throws Exception {
        LockClient alice =
                track(LockClient.connect(server.uri(namespace).replace("zookeeper://", "zookeeper://alice:s3cret@")));
        LockClient mallory =
                track(LockClient.connect(server.uri(namespace).replace("zookeeper://", "zookeeper://mallory:guess@")));
        try (Lease lease = alice.lock("secured").acquire()) {
            assertThat(lease.isValid()).isTrue();
            assertThatThrownBy(() -> mallory.lock("secured").tryAcquire(Duration.ofSeconds(2)))
                    .isInstanceOf(LockBackendException.class)
                    .hasMessageContaining("NOAUTH")
                    .hasMessageContaining("secured")
                    .hasMessageNotContaining("s3cret");
            assertThat(children("secured")).hasSize(1);
        }
        // Alice's own second client (same credentials) is allowed.
        LockClient alice2 =
                track(LockClient.connect(server.uri(namespace).replace("zookeeper://", "zookeeper://alice:s3cret@")));
        assertThat(alice2.lock("secured").tryAcquire(Duration.ZERO)).isPresent();
    }

    @Test
    void release_lastHolder_emptyLockParentsDisappear() throws Exception {
        LockClient client = client();
        for (String name : List.of("x", "y", "z")) {
            try (Lease lease = client.lock(name).acquire()) {
                assertThat(children(name)).hasSize(1);
            }
        }
        // Lock parents and the namespace are container nodes: the server removes them when empty.
        await().atMost(Timing.scale(Duration.ofSeconds(10)))
                .until(() -> !server.children("/").contains(namespace));
    }
}
