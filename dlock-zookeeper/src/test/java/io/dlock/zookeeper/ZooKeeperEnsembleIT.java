package io.dlock.zookeeper;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.dlock.DistributedLock;
import io.dlock.Lease;
import io.dlock.LockClient;
import io.dlock.testkit.FaultProxy;
import io.dlock.testkit.FencedStore;
import io.dlock.testkit.FencingChecker;
import io.dlock.testkit.Timing;
import io.dlock.testkit.ZooKeeperEnsemble;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/**
 * Issue 17 item 2: dlock on a 3-server ZooKeeper ensemble ({@link ZooKeeperEnsemble}) while the
 * leader dies, the quorum goes, or a minority member is cut off.
 *
 * <p>The safe window: a client whose connection drops keeps its leases for 1/6 of the session
 * timeout ({@code maxSuspension}), the time the ensemble is still sure to keep its session. With 30 s
 * sessions that is 5 s, ample for an election on loopback; with 3 s sessions it is 0.5 s, which a
 * lost quorum outlasts.
 */
class ZooKeeperEnsembleIT {

    private static final int WORKERS = 3;
    private static final int OPS_PER_WORKER = 40;

    @Test
    void leaderKilled_whileHeldAndContended_leasesKeptCounterExactTokensRising() throws Exception {
        try (ZooKeeperEnsemble ensemble = ZooKeeperEnsemble.start()) {
            String uri = ensemble.uri("leader") + "?sessionTimeout=60s&connectTimeout=20s";
            FencedStore store = FencedStore.fenced();
            List<LockClient> clients = new ArrayList<>();
            ExecutorService pool = Executors.newFixedThreadPool(WORKERS);
            try {
                for (int i = 0; i < WORKERS + 1; i++) {
                    clients.add(LockClient.connect(uri));
                }
                Lease kept = clients.get(WORKERS).lock("kept").acquire();
                AtomicInteger lost = new AtomicInteger();
                kept.onLost(e -> lost.incrementAndGet());

                AtomicLong done = new AtomicLong();
                List<Future<?>> workers = new ArrayList<>();
                for (int w = 0; w < WORKERS; w++) {
                    DistributedLock lock = clients.get(w).lock("counter");
                    String name = "w" + w;
                    workers.add(pool.submit(() -> {
                        for (int op = 0; op < OPS_PER_WORKER; op++) {
                            increment(lock, name, store);
                            done.incrementAndGet();
                        }
                        return null;
                    }));
                }
                await().atMost(Timing.scale(Duration.ofSeconds(30))).until(() -> done.get() >= WORKERS * 5);
                int leader = ensemble.leader().orElseThrow();
                long tokenBefore = store.highestToken();
                long killed = System.nanoTime();
                ensemble.member(leader).kill();
                int next = ensemble.awaitLeader(Timing.scale(Duration.ofSeconds(60)));
                ensemble.awaitServing(Timing.scale(Duration.ofSeconds(60)));
                Duration election = Duration.ofNanos(System.nanoTime() - killed);
                assertThat(next).isNotEqualTo(leader);
                ensemble.member(leader).restart();

                for (Future<?> f : workers) {
                    f.get(Timing.scale(Duration.ofSeconds(120)).toMillis(), TimeUnit.MILLISECONDS);
                }
                // 60 s sessions: a lease survives 10 s without a server (the safe window).
                Duration window = Duration.ofSeconds(10);
                if (election.compareTo(window.minusSeconds(1)) < 0) {
                    assertThat(kept.isValid()).as("election took %s", election).isTrue();
                    assertThat(lost).as("election took %s", election).hasValue(0);
                    assertThat(clients.get(0).lock("kept").tryAcquire(Duration.ZERO))
                            .isEmpty();
                } else if (election.compareTo(window.plusSeconds(1)) > 0) {
                    await().atMost(Duration.ofSeconds(5)).until(() -> lost.get() == 1);
                    assertThat(kept.isValid()).as("election took %s", election).isFalse();
                }
                System.out.println("ZooKeeperEnsembleIT: election after the leader's kill took " + election.toMillis()
                        + " ms; held lease valid: " + kept.isValid());
                kept.close();

                FencingChecker.Report report = store.check();
                assertThat(report.safe()).as("%s", report).isTrue();
                assertThat(report.overlaps()).as("%s", report).isZero();
                assertThat(store.value()).isEqualTo((long) WORKERS * OPS_PER_WORKER);
                assertThat(store.acceptedWrites()).isEqualTo((long) WORKERS * OPS_PER_WORKER);
                assertThat(store.highestToken()).isGreaterThan(tokenBefore);
                long previous = Long.MIN_VALUE;
                for (FencedStore.Write write : store.history()) {
                    assertThat(write.accepted()).isTrue();
                    assertThat(write.token()).isGreaterThan(previous);
                    previous = write.token();
                }
            } finally {
                pool.shutdownNow();
                for (LockClient c : clients) {
                    c.close();
                }
            }
        }
    }

    @Test
    void quorumLostLongerThanSafeWindow_leaseLostWithOnLostThenUsableAgain() throws Exception {
        try (ZooKeeperEnsemble ensemble = ZooKeeperEnsemble.start()) {
            String uri = ensemble.uri("quorum") + "?sessionTimeout=3s&connectTimeout=20s";
            try (LockClient holder = LockClient.connect(uri)) {
                Lease lease = holder.lock("q").acquire();
                AtomicInteger lost = new AtomicInteger();
                lease.onLost(e -> lost.incrementAndGet());
                int leader = ensemble.leader().orElseThrow();
                int follower = (leader + 1) % ensemble.size();

                ensemble.member(leader).kill();
                ensemble.member(follower).kill(); // one of three left: no quorum, no election

                await().atMost(Timing.scale(Duration.ofSeconds(10))).until(() -> lost.get() == 1);
                assertThat(lease.isValid()).isFalse();

                ensemble.member(leader).restartAsync();
                ensemble.member(follower).restart(); // two of three: a quorum again
                ensemble.awaitServing(Timing.scale(Duration.ofSeconds(30)));
                lease.close();
                try (LockClient other = LockClient.connect(uri);
                        Lease next = other.lock("q")
                                .tryAcquire(Timing.scale(Duration.ofSeconds(20)))
                                .orElseThrow()) {
                    assertThat(next.fencingToken()).isGreaterThan(lease.fencingToken());
                }
                assertThat(lost).hasValue(1);
            }
        }
    }

    @Test
    void minorityMemberPartitioned_itsClientMovesToMajorityAndKeepsItsLease() throws Exception {
        try (ZooKeeperEnsemble ensemble = ZooKeeperEnsemble.start()) {
            int leader = ensemble.leader().orElseThrow();
            int minority = (leader + 1) % ensemble.size();
            int majority = (leader + 2) % ensemble.size();
            // The client knows two members through proxies; the majority's proxy refuses while it
            // connects, so it lands on the member about to be cut off. (A silent proxy would hold a
            // client that tries it first for its whole per-server timeout, half the session's 30 s.)
            try (FaultProxy toMinority =
                            FaultProxy.start(ensemble.member(minority).port());
                    FaultProxy toMajority =
                            FaultProxy.start(ensemble.member(majority).port())) {
                toMajority.refuse();
                String uri = "zookeeper://" + toMinority.connectString() + "," + toMajority.connectString()
                        + "/partition?sessionTimeout=30s&connectTimeout=20s";
                try (LockClient moving = LockClient.connect(uri);
                        LockClient stayer = LockClient.connect(ensemble.uri("partition") + "?sessionTimeout=30s")) {
                    assertThat(toMinority.openConnections()).isPositive();
                    toMajority.pass();
                    Lease lease = moving.lock("p").acquire();
                    AtomicInteger lost = new AtomicInteger();
                    lease.onLost(e -> lost.incrementAndGet());
                    long accepted = toMajority.acceptedConnections();

                    ensemble.partition(minority);
                    // The cut-off member stops serving; the client reconnects through the majority's
                    // proxy within its 5 s window, so its session and lease live on.
                    await().atMost(Timing.scale(Duration.ofSeconds(20)))
                            .until(() -> toMajority.acceptedConnections() > accepted);
                    assertThat(ensemble.member(minority).mode()).isEmpty();
                    try (Lease other = moving.lock("p2")
                            .tryAcquire(Timing.scale(Duration.ofSeconds(20)))
                            .orElseThrow()) {
                        assertThat(other.isValid()).isTrue();
                    }
                    assertThat(lease.isValid()).isTrue();
                    assertThat(lost).hasValue(0);
                    assertThat(stayer.lock("p").tryAcquire(Duration.ofMillis(500)))
                            .isEmpty();
                    long token = lease.fencingToken();
                    lease.close();
                    try (Lease next = stayer.lock("p")
                            .tryAcquire(Timing.scale(Duration.ofSeconds(20)))
                            .orElseThrow()) {
                        assertThat(next.fencingToken()).isGreaterThan(token);
                    }

                    ensemble.heal(minority);
                    ensemble.awaitServing(Timing.scale(Duration.ofSeconds(30)));
                    assertThat(ensemble.member(minority).mode()).isPresent();
                }
            }
        }
    }

    /** One read-modify-write of the store under the lock, retried through connection trouble. */
    private static void increment(DistributedLock lock, String name, FencedStore store) throws InterruptedException {
        for (int attempt = 0; attempt < 100; attempt++) {
            Optional<Lease> acquired;
            try {
                acquired = lock.tryAcquire(Duration.ofSeconds(30));
            } catch (RuntimeException e) {
                continue; // the ensemble is electing: try again
            }
            if (acquired.isEmpty()) {
                continue;
            }
            try (Lease lease = acquired.get()) {
                OptionalLong value = store.read(name, lease.fencingToken());
                if (value.isPresent() && store.write(name, lease.fencingToken(), value.getAsLong() + 1)) {
                    return;
                }
            }
        }
        throw new AssertionError(name + " could not increment in 100 attempts");
    }
}
