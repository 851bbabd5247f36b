package io.dlock.etcd;

import static org.assertj.core.api.Assertions.assertThat;

import io.dlock.testkit.DlockServer;
import io.dlock.testkit.EtcdServer;
import io.dlock.testkit.LockFixtureSupport;
import io.dlock.testkit.Timing;
import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.KeyValue;
import io.etcd.jetcd.options.GetOption;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.TestInfo;

/**
 * One etcd per test class ({@link DlockServer}); a fresh namespace and fresh clients per test. After each test every
 * client is closed and etcd must hold no key under the test's namespace: whatever dlock creates, it
 * removes.
 */
@DlockServer(DlockServer.Kind.ETCD)
abstract class EtcdTestSupport extends LockFixtureSupport {
    static EtcdServer server;
    /** A plain jetcd client for inspecting and tampering with what dlock keeps. */
    static Client inspector;

    String prefix;

    @BeforeAll
    static void startServer(EtcdServer started) {
        server = started;
        inspector =
                Client.builder().endpoints("http://" + server.connectString()).build();
    }

    @AfterAll
    static void stopServer() {
        inspector.close();
    }

    @BeforeEach
    void newPrefix(TestInfo info) {
        prefix = "t-" + info.getTestMethod().orElseThrow().getName();
        markEpoch(inspector, prefix);
    }

    /**
     * Writes the epoch marker of {@code namespace} with a token offset of 0, as a first grant would
     * once its fence ran out: a namespace without one fences its first grant for a lease time (see
     * EtcdLockProtocol), which a test of something else should not wait for.
     */
    static void markEpoch(Client etcd, String namespace) {
        try {
            etcd.getKVClient()
                    .put(bytes(EtcdLockProtocol.root(namespace) + "#epoch"), bytes("test 0"))
                    .get(10, TimeUnit.SECONDS);
        } catch (Exception e) {
            throw new IllegalStateException("cannot mark the epoch of " + namespace, e);
        }
    }

    /** Every key under this test's namespace but its epoch marker. */
    List<String> lockKeys() {
        return keys(prefix + "/").stream().filter(k -> !isEpochMarker(k)).toList();
    }

    /** Whether {@code key} is a namespace's epoch marker, which stays by design. */
    static boolean isEpochMarker(String key) {
        return key.endsWith("//#epoch");
    }

    @AfterEach
    void closeClientsAndCheckClean() throws Exception {
        closeTracked();
        if (server.isAlive()) {
            assertThat(keys(prefix + "/").stream().filter(k -> !isEpochMarker(k)))
                    .as("keys left under %s/", prefix)
                    .isEmpty();
        }
    }

    @Override
    public String backendName() {
        return "etcd";
    }

    @Override
    public String shortLease() {
        return "leaseTime=2s";
    }

    @Override
    public Duration crashReleaseBound() {
        // The dead holder's lease (2 s) runs out on etcd's leader, which checks every 500 ms.
        return Duration.ofSeconds(5);
    }

    @Override
    public String uri(String query) {
        return server.uri(prefix) + (query.isEmpty() ? "" : "?" + query);
    }

    @Override
    public List<String> entries(String lock) {
        return keys(prefix + "//" + lock + "/x/");
    }

    /** Every key under {@code keyPrefix}, by create revision, with the prefix's namespace stripped of nothing. */
    static List<String> keys(String keyPrefix) {
        return kvs(keyPrefix).stream()
                .map(kv -> kv.getKey().toString(StandardCharsets.UTF_8))
                .toList();
    }

    static List<KeyValue> kvs(String keyPrefix) {
        try {
            return inspector
                    .getKVClient()
                    .get(
                            bytes(keyPrefix),
                            GetOption.builder()
                                    .isPrefix(true)
                                    .withSortField(GetOption.SortTarget.CREATE)
                                    .withSortOrder(GetOption.SortOrder.ASCEND)
                                    .build())
                    .get(10, TimeUnit.SECONDS)
                    .getKvs();
        } catch (Exception e) {
            throw new IllegalStateException("cannot read " + keyPrefix + " from " + server, e);
        }
    }

    static ByteSequence bytes(String s) {
        return ByteSequence.from(s, StandardCharsets.UTF_8);
    }

    static Duration scaled(long seconds) {
        return Timing.scale(Duration.ofSeconds(seconds));
    }
}
