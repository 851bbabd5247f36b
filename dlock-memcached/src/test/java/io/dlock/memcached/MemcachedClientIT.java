package io.dlock.memcached;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.dlock.Lease;
import io.dlock.LockBackendException;
import io.dlock.LockClient;
import io.dlock.testkit.FreePorts;
import io.dlock.testkit.MemcachedServer;
import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** Connecting, and bad input: each gets a clear exception and changes nothing on the server. */
class MemcachedClientIT extends MemcachedTestSupport {

    @Test
    void connect_nothingListening_failsNamingTheServerWithinTheConnectTimeout() {
        int port = FreePorts.loopback();
        long start = System.nanoTime();
        assertThatThrownBy(() -> LockClient.connect("memcached://127.0.0.1:" + port + "?connectTimeout=2s"))
                .isInstanceOf(LockBackendException.class)
                .hasMessageContaining("127.0.0.1:" + port)
                .hasMessageContaining("is memcached running there?");
        assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start))
                .isLessThan(scaled(3).toMillis());
    }

    @Test
    void connect_oneOfTwoServersDown_failsNamingThatServer() {
        int port = FreePorts.loopback();
        assertThatThrownBy(() -> LockClient.connect(
                        "memcached://" + server.connectString() + ",127.0.0.1:" + port + "?connectTimeout=2s"))
                .isInstanceOf(LockBackendException.class)
                .hasMessageContaining("127.0.0.1:" + port);
    }

    @Test
    void connect_serverThatIsNotMemcached_failsSayingSo() throws Exception {
        try (ServerSocket fake = new ServerSocket(0, 5, InetAddress.getLoopbackAddress())) {
            Thread t = new Thread(() -> {
                try (Socket s = fake.accept()) {
                    s.getInputStream().read(new byte[64]);
                    s.getOutputStream().write("-ERR unknown command 'mn'\r\n".getBytes(StandardCharsets.US_ASCII));
                    s.getInputStream().read(new byte[64]); // until the client gives up
                } catch (IOException ignored) {
                    // the client closed
                }
            });
            t.start();
            assertThatThrownBy(() ->
                            LockClient.connect("memcached://127.0.0.1:" + fake.getLocalPort() + "?connectTimeout=2s"))
                    .isInstanceOf(LockBackendException.class)
                    .hasMessageContaining("meta protocol")
                    .hasMessageContaining("1.6");
            t.join(5000);
        }
    }

    @Test
    void connect_credentialsToAServerWithoutAuth_refusedAndThePasswordNeverSent() {
        assertThatThrownBy(() -> LockClient.connect("memcached://app:s3cret@" + server.connectString()))
                .isInstanceOf(LockBackendException.class)
                .hasMessageContaining("does not ask for authentication")
                .hasMessageContaining("-Y")
                .hasMessageNotContaining("s3cret");
        // Such a server would have stored the credentials as an item: none was written.
        assertThat(server.command("mg dlock:auth v")).isEqualTo("EN");
    }

    @Test
    void connect_serverWithAsciiAuth_needsTheRightCredentials() throws Exception {
        try (MemcachedServer auth = MemcachedServer.startWithAuth("app", "s3cret")) {
            String hostPort = auth.connectString();
            assertThatThrownBy(() -> LockClient.connect("memcached://" + hostPort))
                    .isInstanceOf(LockBackendException.class)
                    .hasMessageContaining("requires authentication");
            assertThatThrownBy(() -> LockClient.connect("memcached://app:wrong@" + hostPort))
                    .isInstanceOf(LockBackendException.class)
                    .hasMessageContaining("refused")
                    .hasMessageNotContaining("wrong");
            LockClient c = track(LockClient.connect(
                    "memcached://app:s3cret@" + hostPort + "?keyPrefix=" + prefix + "&leaseTime=1s"));
            // A fresh server: granted once its quarantine (1 s lease + 1 s) is over.
            long token;
            try (Lease l = c.lock("auth").tryAcquire(scaled(10)).orElseThrow()) {
                assertThat(l.isValid()).isTrue();
                token = l.fencingToken();
            }
            try (Lease l = c.lock("auth").tryAcquire(Duration.ZERO).orElseThrow()) {
                assertThat(l.fencingToken()).isGreaterThan(token);
            }
        }
    }

    @Test
    void lock_badNames_clearErrorsAndNothingOnTheServer() {
        LockClient c = client();
        assertThatThrownBy(() -> c.lock("has space"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("' '");
        assertThatThrownBy(() -> c.lock("ctl\u0001"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("U+0001");
        assertThatThrownBy(() -> c.lock("x".repeat(201)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("201 characters");
        assertThatThrownBy(() -> c.lock("")).isInstanceOf(IllegalArgumentException.class);
        // Outside ASCII a character takes up to 4 bytes of memcached's 250: refused, never hashed.
        assertThatThrownBy(() -> c.lock("caf\u00e9"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("allowed: A-Z a-z 0-9 _ - . :");
        assertThat(server.keys(prefix + ":")).isEmpty();
    }

    @Test
    void lock_longestName_worksWithinTheKeyLimit() throws Exception {
        String name = "n".repeat(200);
        LockClient c = LockClient.connect(server.uri("p".repeat(MemcachedUri.MAX_KEY_PREFIX)));
        try (c;
                var lease = c.lock(name).acquire()) {
            assertThat(lease.isValid()).isTrue();
            assertThat(c.lock(name).tryAcquire(Duration.ZERO)).isPresent(); // reentrant
        }
        assertThat(server.keys("p".repeat(MemcachedUri.MAX_KEY_PREFIX) + ":l:")).isEmpty();
    }

    @Test
    void connect_badParameters_clearErrors() {
        assertThatThrownBy(() -> LockClient.connect(uri("leaseTime=100ms")))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("leaseTime");
        assertThatThrownBy(() -> LockClient.connect("memcached://" + server.connectString() + "?keyPrefix=a%20b"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("keyPrefix");
        assertThatThrownBy(() -> LockClient.connect(uri("colour=blue")))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("colour");
    }
}
