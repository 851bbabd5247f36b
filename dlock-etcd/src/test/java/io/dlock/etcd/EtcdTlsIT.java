package io.dlock.etcd;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.dlock.Lease;
import io.dlock.LockBackendException;
import io.dlock.LockClient;
import io.dlock.testkit.EtcdServer;
import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.options.GetOption;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * {@code etcds://} against a real etcd serving TLS with a certificate from a CA made at test
 * time: the right CA connects and locks; a wrong CA, or none, is refused with an error that says
 * TLS and how to give the CA.
 */
class EtcdTlsIT {
    static EtcdServer server;
    static Client inspector;

    @BeforeAll
    static void start() {
        server = EtcdServer.startTls();
        inspector =
                Client.builder().endpoints("http://" + server.connectString()).build();
    }

    @AfterAll
    static void stop() {
        if (inspector != null) {
            inspector.close();
        }
        if (server != null) {
            server.close();
        }
    }

    static String tlsUri(String namespace, String query) {
        return "etcds://127.0.0.1:" + server.tlsPort() + "/" + namespace + "?connectTimeout=3s" + query;
    }

    static long keys(String prefix) throws Exception {
        return inspector
                .getKVClient()
                .get(
                        ByteSequence.from(prefix, StandardCharsets.UTF_8),
                        GetOption.builder().isPrefix(true).withCountOnly(true).build())
                .get(10, TimeUnit.SECONDS)
                .getCount();
    }

    @Test
    void etcds_withTheServersCa_locksOverTls() throws Exception {
        Path ca = server.caCertificate();
        EtcdTestSupport.markEpoch(inspector, "tls-ok");
        try (LockClient client = LockClient.connect(tlsUri("tls-ok", "&ca=" + ca))) {
            try (Lease lease = client.lock("orders").acquire()) {
                assertThat(lease.isValid()).isTrue();
                assertThat(lease.fencingToken()).isPositive();
                assertThat(keys("tls-ok//orders/x/")).isEqualTo(1);
            }
            assertThat(keys("tls-ok//orders/x/")).isZero();
        }
    }

    @Test
    void etcds_withTheWrongCa_refusedWithATlsErrorAndNothingOnTheServer() throws Exception {
        Path wrong = server.otherCaCertificate();
        assertThatThrownBy(() -> LockClient.connect(tlsUri("tls-wrong", "&ca=" + wrong)))
                .isInstanceOf(LockBackendException.class)
                .hasMessageContaining("127.0.0.1:" + server.tlsPort())
                .hasMessageContaining("TLS")
                .hasMessageContaining("?ca=");
        assertThat(keys("tls-wrong/")).isZero();
    }

    @Test
    void etcds_withoutCa_theJvmTrustStoreDoesNotKnowTheTestCa_refusedWithATlsError() {
        assertThatThrownBy(() -> LockClient.connect(tlsUri("tls-none", "")))
                .isInstanceOf(LockBackendException.class)
                .hasMessageContaining("TLS")
                .hasMessageContaining("?ca=");
    }
}
