package io.dlock.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.dlock.Lease;
import io.dlock.LockBackendException;
import io.dlock.LockClient;
import io.dlock.testkit.ChildJvm;
import io.dlock.testkit.Contention;
import io.dlock.testkit.LockWorker;
import io.dlock.testkit.RedisServer;
import io.dlock.testkit.Timing;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * {@code rediss://} against a redis-server that speaks TLS only ({@code port 0}, {@code tls-port}),
 * with a certificate for 127.0.0.1 signed by a throwaway CA that this JVM does not trust.
 */
class RedisTlsIT {
    static RedisServer server;

    @BeforeAll
    static void startServer() {
        server = RedisServer.builder().tls().start();
    }

    @AfterAll
    static void stopServer() {
        server.close();
    }

    private static String uri(String prefix, String query) {
        RedisTestSupport.markContinuous(server, prefix);
        return server.uri(prefix) + (query.isEmpty() ? "" : "&" + query); // rediss://127.0.0.1:port?keyPrefix=…
    }

    @Test
    void acquire_verifyPeerNone_grantsFencedAndExcludesTwoClientsFourThreads() throws Exception {
        assertThat(server.command("CONFIG", "GET", "port")).isEqualTo(List.of("port", "0")); // TLS only
        String uri = uri("tls-mx", "verifyPeer=none");
        try (LockClient a = LockClient.connect(uri);
                LockClient b = LockClient.connect(uri)) {
            long first;
            try (Lease lease = a.lock("single").acquire()) {
                first = lease.fencingToken();
                assertThat(first).isPositive();
                assertThat(lease.isValid()).isTrue();
                assertThat(b.lock("single").tryAcquire(Duration.ZERO)).isEmpty();
            }
            try (Lease again = b.lock("single").tryAcquire(Duration.ZERO).orElseThrow()) {
                assertThat(again.fencingToken()).isGreaterThan(first);
            }

            Contention.Result r =
                    Contention.run(new LockClient[] {a, b}, "counter", 4, 100, Timing.scale(Duration.ofSeconds(40)));
            assertThat(r.checker().counter()).isEqualTo(400);
            assertThat(r.checker().violations()).isZero();
            assertThat(r.store().rejectedWrites()).isZero();
        }
        assertThat(RedisTestSupport.lockKeys(server, "tls-mx:*")).isEmpty();
    }

    @ParameterizedTest
    @ValueSource(strings = {"", "verifyPeer=full", "verifyPeer=ca"})
    void connect_untrustedCa_failsNamingTlsAndLeavesNothingOpen(String query) {
        Set<String> before = clientThreads();
        String expected = query.equals("verifyPeer=ca") ? "verifyPeer=ca" : "verifyPeer=full"; // full is the default
        assertThatThrownBy(() -> LockClient.connect(uri("tls-untrusted", query)))
                .isInstanceOf(LockBackendException.class)
                .hasMessageContaining("127.0.0.1:" + server.port())
                .hasMessageContaining("TLS handshake failed")
                .hasMessageContaining("certification path") // the JDK's PKIX reason: an unknown CA
                .hasMessageContaining(expected)
                .hasMessageContaining("trust store")
                .hasMessageNotContaining("is Redis running there");
        assertNothingOpen(before);
    }

    @Test
    void connect_plainRedisToTlsPort_failsWithinConnectTimeoutNamingTls() {
        Set<String> before = clientThreads();
        long start = System.nanoTime();
        assertThatThrownBy(() -> LockClient.connect("redis://127.0.0.1:" + server.port() + "?connectTimeout=2s"))
                .isInstanceOf(LockBackendException.class)
                .hasMessageContaining("cannot connect to 127.0.0.1:" + server.port())
                .hasMessageContaining("rediss://");
        assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Timing.scale(Duration.ofSeconds(2)));
        assertNothingOpen(before);
    }

    /**
     * Verification on, with the CA trusted. Lettuce takes trust from the JVM's default trust store
     * and the URI has no trust-store parameter, so the client runs in a child JVM started with
     * {@code -Djavax.net.ssl.trustStore}: setting that property here would change every TLS
     * connection of this JVM.
     */
    @ParameterizedTest
    @ValueSource(strings = {"full", "ca"})
    void acquire_caInJvmTrustStore_verifyPeerSucceeds(String verify, @TempDir Path dir) throws Exception {
        Path counter = dir.resolve("counter");
        Files.writeString(counter, "0");
        List<String> jvmOptions = new ArrayList<>(ChildJvm.DEFAULT_JVM_OPTIONS);
        jvmOptions.add("-Djavax.net.ssl.trustStore=" + server.caTrustStore());
        jvmOptions.add("-Djavax.net.ssl.trustStorePassword=" + RedisServer.TRUST_STORE_PASSWORD);
        jvmOptions.add("-Djavax.net.ssl.trustStoreType=PKCS12");
        String uri = uri("tls-trusted-" + verify, "verifyPeer=" + verify);
        try (ChildJvm child = ChildJvm.start(
                LockWorker.class, List.of("count", uri, "trusted", counter.toString(), "3"), jvmOptions)) {
            child.awaitLine("DONE", Timing.scale(Duration.ofSeconds(30)));
            assertThat(child.waitFor(Timing.scale(Duration.ofSeconds(20)))).isZero();
        }
        assertThat(Files.readString(counter).trim()).isEqualTo("3");
        List<Long> tokens = Files.readAllLines(Path.of(counter + ".tokens")).stream()
                .map(Long::parseLong)
                .toList();
        assertThat(tokens)
                .hasSize(3)
                .allSatisfy(t -> assertThat(t).isPositive())
                .isSorted();
        assertThat(RedisTestSupport.lockKeys(server, "tls-trusted-" + verify + ":*"))
                .isEmpty();
    }

    /** Threads that a dlock Redis client starts (Lettuce's event loops, dlock's timer). */
    private static Set<String> clientThreads() {
        return Thread.getAllStackTraces().keySet().stream()
                .filter(Thread::isAlive)
                .map(Thread::getName)
                .filter(n -> n.startsWith("lettuce-") || n.startsWith("dlock-redis-"))
                .collect(Collectors.toSet());
    }

    /** No client thread beyond {@code before} survives, and no connection named dlock is on the server. */
    private static void assertNothingOpen(Set<String> before) {
        await().atMost(Timing.scale(Duration.ofSeconds(10)))
                .untilAsserted(() -> assertThat(clientThreads()).isSubsetOf(before));
        assertThat((String) server.command("CLIENT", "LIST")).doesNotContain("name=dlock");
    }
}
