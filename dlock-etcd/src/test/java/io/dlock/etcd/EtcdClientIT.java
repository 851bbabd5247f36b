package io.dlock.etcd;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.dlock.Capability;
import io.dlock.Lease;
import io.dlock.LockBackendException;
import io.dlock.LockClient;
import io.dlock.LockOptions;
import io.dlock.testkit.EtcdServer;
import io.dlock.testkit.FreePorts;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.auth.Permission;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Connecting: bad URIs, an unreachable cluster, credentials against an etcd with auth enabled, an
 * application's own jetcd client, and the capabilities.
 */
class EtcdClientIT extends EtcdTestSupport {

    @Test
    void connect_nothingListening_clearErrorWithinTheConnectTimeout() {
        int port = FreePorts.loopback();
        long start = System.nanoTime();
        assertThatThrownBy(() -> LockClient.connect("etcd://127.0.0.1:" + port + "/x?connectTimeout=2s"))
                .isInstanceOf(LockBackendException.class)
                .hasMessageContaining("cannot connect to 127.0.0.1:" + port)
                .hasMessageContaining("etcd");
        assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start))
                .isLessThan(scaled(10).toMillis());
    }

    /** jetcd refused every retry policy whose first delay (500 ms) was not shorter than the connect timeout. */
    @ParameterizedTest(name = "connectTimeout={0}")
    @ValueSource(strings = {"200ms", "500ms", "501ms"})
    void connect_shortConnectTimeout_connectsAndLocks(String timeout) throws Exception {
        try (LockClient client = LockClient.connect(uri("connectTimeout=" + timeout));
                LockClient other = LockClient.connect(uri("connectTimeout=" + timeout));
                Lease lease = client.lock("short").tryAcquire(scaled(5)).orElseThrow()) {
            assertThat(lease.fencingToken()).isPositive();
            assertThat(other.lock("short").tryAcquire(Duration.ZERO)).isEmpty();
        }
    }

    @Test
    void connect_shortConnectTimeoutNothingListening_clearErrorNotJetcdsRetryPolicy() {
        int port = FreePorts.loopback();
        assertThatThrownBy(() -> LockClient.connect("etcd://127.0.0.1:" + port + "/x?connectTimeout=200ms"))
                .isInstanceOf(LockBackendException.class)
                .hasMessageContaining("cannot connect to 127.0.0.1:" + port)
                .satisfies(e -> assertThat(stackTrace(e)).doesNotContain("maxDuration"));
    }

    private static String stackTrace(Throwable e) {
        java.io.StringWriter out = new java.io.StringWriter();
        e.printStackTrace(new java.io.PrintWriter(out));
        return out.toString();
    }

    @Test
    void connect_badUri_illegalArgumentAndNothingOnTheServer() {
        String at = server.connectString();
        assertThatThrownBy(() -> LockClient.connect("etcd://" + at + "/" + prefix + "?leaseTime=forever"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("leaseTime");
        assertThatThrownBy(() -> LockClient.connect("etcd://" + at + "/" + prefix + "?lockdelay=1s"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("lockdelay");
        assertThatThrownBy(() -> LockClient.connect("etcd:///" + prefix))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("no host");
        assertThat(lockKeys()).isEmpty();
    }

    @Test
    void authEnabled_rightPasswordWorks_wrongOrMissingOneIsRefusedWithoutEchoingIt() throws Exception {
        try (EtcdServer secured = EtcdServer.start();
                Client admin = Client.builder()
                        .endpoints("http://" + secured.connectString())
                        .build()) {
            var auth = admin.getAuthClient();
            auth.roleAdd(bytes("root")).get(10, TimeUnit.SECONDS);
            auth.userAdd(bytes("root"), bytes("rootpw")).get(10, TimeUnit.SECONDS);
            auth.userGrantRole(bytes("root"), bytes("root")).get(10, TimeUnit.SECONDS);
            auth.roleAdd(bytes("locker")).get(10, TimeUnit.SECONDS);
            auth.roleGrantPermission(bytes("locker"), bytes("app/"), bytes("app0"), Permission.Type.READWRITE)
                    .get(10, TimeUnit.SECONDS);
            auth.userAdd(bytes("alice"), bytes("Pa55word")).get(10, TimeUnit.SECONDS);
            auth.userGrantRole(bytes("alice"), bytes("locker")).get(10, TimeUnit.SECONDS);
            auth.authEnable().get(10, TimeUnit.SECONDS);
            String hosts = secured.connectString();

            try (LockClient alice = LockClient.connect("etcd://alice:Pa55word@" + hosts + "/app?connectTimeout=5s");
                    Lease lease = alice.lock("job").acquire()) {
                assertThat(lease.fencingToken()).isPositive();
            }
            assertThatThrownBy(() -> LockClient.connect("etcd://alice:WrongPass@" + hosts + "/app?connectTimeout=5s"))
                    .isInstanceOf(LockBackendException.class)
                    .hasMessageContaining("authentication refused for user 'alice'")
                    .satisfies(e -> assertThat(e.getMessage()).doesNotContain("WrongPass"));
            assertThatThrownBy(() -> LockClient.connect("etcd://" + hosts + "/app?connectTimeout=5s"))
                    .isInstanceOf(LockBackendException.class)
                    .hasMessageContaining("cannot connect");
            assertThatThrownBy(() -> LockClient.connect("etcd://alice:Pa55word@" + hosts + "/other?connectTimeout=5s"))
                    .isInstanceOf(LockBackendException.class)
                    .hasMessageContaining("permission denied");
        }
    }

    @Test
    void handedInClient_locksWork_andClosingDlockLeavesTheClientOpen() throws Exception {
        LockClient locks = track(EtcdLocks.connect(inspector, prefix, LockOptions.defaults()));
        LockClient other = client("");
        try (Lease lease = locks.lock("shared").acquire()) {
            assertThat(other.lock("shared").tryAcquire(Duration.ZERO)).isEmpty();
            assertThat(entries("shared")).hasSize(1);
            assertThat(lease.fencingToken()).isPositive();
        }
        locks.close();
        assertThat(inspector
                        .getKVClient()
                        .get(bytes(prefix))
                        .get(10, TimeUnit.SECONDS)
                        .getKvs())
                .isEmpty();
        assertThat(other.lock("shared").tryAcquire(Duration.ZERO)).isPresent();
        assertThatThrownBy(() -> EtcdLocks.connect(inspector, "a//b", LockOptions.defaults()))
                .isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void capabilities_areTruthful() {
        assertThat(client("").capabilities())
                .containsExactlyInAnyOrder(
                        Capability.EXCLUSIVE,
                        Capability.FAIR,
                        Capability.FENCING_TOKENS,
                        Capability.READ_WRITE,
                        Capability.SEMAPHORE,
                        Capability.MULTI_LOCK,
                        Capability.LOST_DETECTION,
                        Capability.CRASH_RELEASE,
                        Capability.NO_HERD,
                        Capability.RENEWAL);
    }
}
