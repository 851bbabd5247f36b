package io.dlock.zookeeper;

import static org.assertj.core.api.Assertions.assertThat;

import io.dlock.DistributedLock;
import io.dlock.LeaderElection;
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

    @Test
    void leaderElectionExample_runs() throws Exception {
        try (EmbeddedZooKeeper zk = EmbeddedZooKeeper.start()) {
            java.util.List<String> scheduler = new java.util.concurrent.CopyOnWriteArrayList<>();
            // --- docs/leader-election.md example (keep in sync) ---
            try (LockClient client = LockClient.connect("zookeeper://" + zk.connectString() + "/myapp")) {
                LeaderElection election = client.leaderElection("scheduler")
                        .onElected(term -> scheduler.add("start " + term.fencingToken()))
                        .onRevoked(term -> scheduler.add("stop"))
                        .start();
                assertThat(election.awaitLeadership(Duration.ofSeconds(10))).isPresent();
                election.close();
            }
            org.awaitility.Awaitility.await().until(() -> scheduler.size() == 2);
            assertThat(scheduler.get(0)).startsWith("start ");
            assertThat(scheduler.get(1)).isEqualTo("stop");
        }
    }
}
