package io.dlock.core.snippets;

import static java.time.Duration.ofSeconds;

import io.dlock.DistributedLock;
import io.dlock.LeaderElection;
import io.dlock.Lease;
import io.dlock.LockClient;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;

/**
 * The API snippets of README.md, docs/getting-started.md, docs/api.md and docs/leader-election.md,
 * compiled here; the docs quote the regions between {@code tag::} and {@code end::} and DocsTest
 * checks that they match, so a snippet that stops compiling fails the build.
 */
@SuppressWarnings({"unused", "try"})
final class ApiSnippets {

    interface Store {
        void write(String order, long token);
    }

    interface Scheduler {
        void start(long term);

        void stop();
    }

    private final Store store = (order, token) -> {};
    private final Scheduler scheduler = new Scheduler() {
        @Override
        public void start(long term) {}

        @Override
        public void stop() {}
    };
    private final String order = "order-1";

    void quickstart() throws InterruptedException {
        // spotless:off
        // tag::quickstart[]
        try (LockClient client = LockClient.connect("zookeeper://127.0.0.1:2181/myapp")) {
            DistributedLock lock = client.lock("orders");
            try (Lease lease = lock.acquire()) {
                // Pass the token to the resource you protect: it refuses tokens lower than the highest seen.
                store.write(order, lease.fencingToken());
            }
        }
        // end::quickstart[]
        // spotless:on
    }

    void tour() throws Exception {
        // spotless:off
        // tag::tour[]
        LockClient client = LockClient.connect("redis://127.0.0.1:6379?leaseTime=30s");
        Lease lease = client.lock("orders").acquire();                 // waits as long as it takes
        Optional<Lease> l = client.lock("orders").tryAcquire(ofSeconds(2)); // ZERO: one attempt
        client.withLock("orders", ofSeconds(5), () -> ship(order));   // else LockTimeoutException
        Lease r = client.readWriteLock("catalog").readLock().acquire(); // many readers or one writer
        Lease p = client.semaphore("exports", 4).acquire(1);           // at most 4 permits in all
        Lease m = client.multiLock(List.of("a", "b")).acquire();       // all or nothing, no deadlock
        CompletableFuture<Lease> f = client.lock("orders").acquireAsync(ofSeconds(5)); // parks no thread
        lease.onLost(e -> stopWork());                                 // runs once if the lock is lost
        client.leaderElection("scheduler").onElected(term -> lead(term)).start(); // a term is a Lease
        // end::tour[]
        // spotless:on
    }

    void election() {
        // spotless:off
        // tag::election[]
        try (LockClient client = LockClient.connect("zookeeper://127.0.0.1:2181/myapp")) {
            LeaderElection election = client.leaderElection("scheduler")
                    .onElected(term -> scheduler.start(term.fencingToken()))
                    .onRevoked(term -> scheduler.stop())
                    .start();
            // ... the application runs; the listeners start and stop the scheduler
            election.close(); // leave: a current term ends (onRevoked runs) and the next candidate leads
        }
        // end::election[]
        // spotless:on
    }

    private boolean ship(String order) {
        return true;
    }

    private void stopWork() {}

    private void lead(Lease term) {}
}
