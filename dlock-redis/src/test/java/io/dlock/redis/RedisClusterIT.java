package io.dlock.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.dlock.DistributedLock;
import io.dlock.Lease;
import io.dlock.LockClient;
import io.dlock.testkit.MutualExclusionChecker;
import io.dlock.testkit.NewDeployment;
import io.dlock.testkit.RedisServer;
import io.lettuce.core.cluster.SlotHash;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** A three-master Redis Cluster: every lock's keys share one slot, so the scripts run unchanged. */
class RedisClusterIT {
    private static final List<RedisServer> nodes = new ArrayList<>();

    @BeforeAll
    static void startCluster() {
        for (int i = 0; i < 3; i++) {
            nodes.add(RedisServer.builder()
                    .persistence(false)
                    .config("cluster-enabled yes")
                    .config("cluster-config-file nodes.conf")
                    .config("cluster-node-timeout 2000")
                    .start());
        }
        int[][] ranges = {{0, 5460}, {5461, 10922}, {10923, 16383}};
        for (int i = 0; i < 3; i++) {
            nodes.get(i).command("CLUSTER", "ADDSLOTSRANGE", "" + ranges[i][0], "" + ranges[i][1]);
        }
        for (int i = 1; i < 3; i++) {
            nodes.get(0)
                    .command("CLUSTER", "MEET", "127.0.0.1", "" + nodes.get(i).port());
        }
        await().atMost(RedisTestSupport.scaled(30)).until(() -> nodes.stream()
                .allMatch(n -> ((String) n.command("CLUSTER", "INFO")).contains("cluster_state:ok")));
    }

    /**
     * Writes the epoch marker of each name's slot on the master that serves it, as a first grant
     * would once its fence had passed: this cluster is known never to have granted anything before.
     */
    private static void markContinuous(String... names) {
        for (String name : names) {
            int slot = SlotHash.getSlot("c:{" + name + "}:x");
            nodes.get(owner(slot)).command("SET", RedisLockProtocol.epochKey("c", slot), "=0");
        }
    }

    @AfterAll
    static void stopCluster() {
        nodes.forEach(RedisServer::close);
        nodes.clear();
    }

    private static String uri(String query) {
        return "redis-cluster://"
                + String.join(",", nodes.stream().map(n -> n.connectString()).toList()) + "?keyPrefix=c"
                + (query.isEmpty() ? "" : "&" + query);
    }

    @Test
    void acquire_locksSpreadOverAllMasters_mutuallyExclusive() throws Exception {
        try (LockClient a = LockClient.connect(uri(""));
                LockClient b = LockClient.connect(uri(""))) {
            List<String> names = List.of("alpha", "bravo", "charlie", "delta", "echo", "foxtrot");
            markContinuous(names.toArray(String[]::new));
            List<MutualExclusionChecker> checkers = new ArrayList<>();
            ExecutorService pool = Executors.newFixedThreadPool(4);
            try {
                List<Future<?>> done = new ArrayList<>();
                for (String name : names) {
                    MutualExclusionChecker checker = new MutualExclusionChecker();
                    checkers.add(checker);
                    for (int t = 0; t < 2; t++) {
                        DistributedLock lock = (t == 0 ? a : b).lock(name);
                        String who = name + t;
                        done.add(pool.submit(() -> {
                            for (int i = 0; i < 40; i++) {
                                try (Lease lease = lock.acquire()) {
                                    checker.enter(who);
                                    checker.incrementUnsafely();
                                    checker.exit(who);
                                }
                            }
                            return null;
                        }));
                    }
                }
                for (Future<?> f : done) {
                    f.get(2, TimeUnit.MINUTES);
                }
            } finally {
                pool.shutdownNow();
            }
            for (MutualExclusionChecker c : checkers) {
                assertThat(c.counter()).isEqualTo(80);
                assertThat(c.violations()).isZero();
            }
            // The names landed on more than one master, and each left nothing behind.
            long mastersUsed = names.stream()
                    .map(n -> slotOwner("c:{" + n + "}:x:q"))
                    .distinct()
                    .count();
            assertThat(mastersUsed).isGreaterThan(1);
            for (RedisServer n : nodes) {
                assertThat(RedisTestSupport.lockKeys(n, "c:*")).isEmpty();
            }
        }
    }

    @Test
    void waiter_onAnotherClient_isWokenAcrossTheCluster() throws Exception {
        try (LockClient a = LockClient.connect(uri(""));
                LockClient b = LockClient.connect(uri(""))) {
            markContinuous("w1", "w2", "w3");
            for (String name : List.of("w1", "w2", "w3")) {
                Lease held = a.lock(name).acquire();
                var waiting = b.lock(name).acquireAsync(Duration.ofMinutes(1));
                Thread.sleep(100);
                assertThat(waiting).isNotDone();
                held.close();
                // Woken by the release's publish (well before the heartbeat of leaseTime / 3 = 10 s).
                try (Lease next = waiting.get(5, TimeUnit.SECONDS)) {
                    assertThat(next.fencingToken()).isGreaterThan(held.fencingToken());
                }
            }
        }
    }

    private static int slotOwner(String key) {
        long slot = (Long) nodes.get(0).command("CLUSTER", "KEYSLOT", key);
        assertThat(slot).isEqualTo(SlotHash.getSlot(key));
        return owner((int) slot);
    }

    @Test
    void init_marksEverySlotOnEveryMaster_thenAllGrantAtOnce_andASecondInitRefuses() throws Exception {
        String prefix = "init";
        String uri = "redis-cluster://"
                + String.join(",", nodes.stream().map(n -> n.connectString()).toList()) + "?keyPrefix=" + prefix
                + "&leaseTime=5s";
        assertThat(NewDeployment.mark(uri)).isNotBlank();
        for (int slot : new int[] {0, 5460, 5461, 10922, 10923, 16383}) {
            assertThat(nodes.get(owner(slot)).command("GET", RedisLockProtocol.epochKey(prefix, slot)))
                    .as("slot %d's epoch marker on its master", slot)
                    .isNotNull();
        }
        // One name per master, all held at once, each granted without waiting for a fence.
        List<String> names = new ArrayList<>();
        boolean[] covered = new boolean[3];
        for (int i = 0; names.size() < 3; i++) {
            int master = owner(SlotHash.getSlot(prefix + ":{n" + i + "}:x"));
            if (!covered[master]) {
                covered[master] = true;
                names.add("n" + i);
            }
        }
        try (LockClient client = LockClient.connect(uri)) {
            List<Lease> held = new ArrayList<>();
            for (String name : names) {
                held.add(client.lock(name)
                        .tryAcquire(Duration.ZERO)
                        .orElseThrow(() -> new AssertionError("not granted at once after init: " + name)));
            }
            assertThat(held).allMatch(Lease::isValid);
            for (Lease lease : held) {
                lease.close();
            }
        }
        assertThatThrownBy(() -> NewDeployment.mark(uri))
                .as("a namespace that granted locks is not new")
                .isInstanceOf(IllegalStateException.class);
    }

    private static int owner(int slot) {
        return slot <= 5460 ? 0 : slot <= 10922 ? 1 : 2;
    }

    /**
     * Each master keeps its own data, so each hash slot has its own epoch marker: a slot whose
     * marker is missing (as after its master restarted without persistence) grants nothing for a
     * lease time, while a slot whose marker is there grants at once.
     */
    @Test
    void acquire_slotWithoutEpochMarker_waitsALeaseTimeWhileOtherSlotsGrant() throws Exception {
        String fresh = "fenced-slot";
        String marked = "marked-slot";
        assertThat(SlotHash.getSlot("c:{" + fresh + "}:x")).isNotEqualTo(SlotHash.getSlot("c:{" + marked + "}:x"));
        markContinuous(marked);
        int slot = SlotHash.getSlot("c:{" + fresh + "}:x");
        RedisServer owner = nodes.get(owner(slot));
        owner.command("DEL", RedisLockProtocol.epochKey("c", slot));
        try (LockClient a = LockClient.connect(uri("leaseTime=2s"))) {
            long start = System.nanoTime();
            assertThat(a.lock(fresh).tryAcquire(Duration.ZERO)).isEmpty();
            try (Lease other = a.lock(marked).tryAcquire(Duration.ZERO).orElseThrow()) {
                assertThat(other.isValid()).isTrue();
            }
            // The fence began at the first acquire and lasts the lease time (2 s), on the server's clock.
            assertThat(String.valueOf(owner.command("GET", RedisLockProtocol.epochKey("c", slot))))
                    .matches("\\d+ \\d+");
            long token;
            try (Lease late =
                    a.lock(fresh).tryAcquire(RedisTestSupport.scaled(10)).orElseThrow()) {
                assertThat(Duration.ofNanos(System.nanoTime() - start)).isGreaterThanOrEqualTo(Duration.ofMillis(1900));
                assertThat(late.isValid()).isTrue();
                token = late.fencingToken();
            }
            // Continuous again, with the grant's server token as the slot's high-water mark.
            assertThat(owner.command("GET", RedisLockProtocol.epochKey("c", slot)))
                    .isEqualTo("=" + (token >> 10));
        }
        for (RedisServer n : nodes) {
            assertThat(RedisTestSupport.lockKeys(n, "c:*")).isEmpty();
        }
    }
}
