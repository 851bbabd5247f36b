package io.dlock.spring.integration;

import static org.assertj.core.api.Assertions.assertThat;

import io.dlock.Lease;
import io.dlock.LockClient;
import io.dlock.testkit.DlockServer;
import io.dlock.testkit.MemcachedServer;
import java.time.Duration;
import java.util.Optional;
import org.junit.jupiter.api.BeforeAll;

/** The registry contract on memcached. */
@DlockServer(DlockServer.Kind.MEMCACHED)
class MemcachedRegistryIT extends LeaseRegistryContract {
    static MemcachedServer server;

    /**
     * A fresh server has no boot marker, so the first client holds grants back for its lease time (the
     * data-loss fence): one grant with a 1 s lease, waited for here, gets that over before the tests.
     */
    @BeforeAll
    static void server(MemcachedServer started) throws InterruptedException {
        server = started;
        try (LockClient first = LockClient.connect(server.uri("settle") + "&leaseTime=1s")) {
            Optional<Lease> lease = first.lock("settle").tryAcquire(Duration.ofSeconds(30));
            assertThat(lease).as("the fence of a fresh server passes").isPresent();
            lease.get().close();
        }
    }

    @Override
    String uri(String namespace) {
        return server.uri(namespace);
    }
}
