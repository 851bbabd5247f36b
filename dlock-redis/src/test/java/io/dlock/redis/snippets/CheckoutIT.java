package io.dlock.redis.snippets;

import static org.assertj.core.api.Assertions.assertThat;

import io.dlock.Lease;
import io.dlock.LockClient;
import io.dlock.testkit.DlockServer;
import io.dlock.testkit.NewDeployment;
import io.dlock.testkit.RedisServer;
import java.time.Duration;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The snippet of docs/testing.md, compiled and run here; the page quotes the region between
 * {@code tag::} and {@code end::} and DocsTest checks that it matches. Without the mark, the first
 * grant on this new server would wait one lease (the data-loss fence).
 */
// spotless:off
// tag::checkout[]
@DlockServer(DlockServer.Kind.REDIS)
class CheckoutIT {
    static String uri;

    @BeforeAll
    static void server(RedisServer redis) {
        uri = redis.uri("checkout-it");
        NewDeployment.mark(uri); // a server this test started: nothing was ever granted on it
    }

    @Test
    void sellsTheLastItemOnce() throws Exception {
        try (LockClient client = LockClient.connect(uri);
             Lease lease = client.lock("stock").tryAcquire(Duration.ZERO).orElseThrow()) {
            assertThat(lease.fencingToken()).isPositive(); // granted at once: the server is marked new
        }
    }
}
// end::checkout[]
// spotless:on
