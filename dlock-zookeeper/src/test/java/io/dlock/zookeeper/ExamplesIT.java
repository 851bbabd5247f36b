package io.dlock.zookeeper;

import static org.assertj.core.api.Assertions.assertThat;

import io.dlock.DistributedLock;
import io.dlock.Lease;
import io.dlock.LockClient;
import io.dlock.testkit.EmbeddedZooKeeper;
import io.dlock.testkit.FencedStore;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/** The README's and javadoc's examples, compiled and run against an embedded ZooKeeper. */
class ExamplesIT {
    @Test
    void readmeExample_runs() throws Exception {
        try (EmbeddedZooKeeper zk = EmbeddedZooKeeper.start()) {
            FencedStore store = new FencedStore();
            String order = "order-1";
            // --- README example (keep in sync) ---
            try (LockClient client = LockClient.connect("zookeeper://" + zk.connectString() + "/myapp")) {
                DistributedLock lock = client.lock("orders");
                try (Lease lease = lock.acquire()) {
                    store.write(order, lease.fencingToken(), 1);
                }
                // --- withLock example ---
                int result = client.withLock("orders", Duration.ofSeconds(2), () -> 42);
                assertThat(result).isEqualTo(42);
            }
            assertThat(store.acceptedWrites()).isEqualTo(1);
        }
    }
}
