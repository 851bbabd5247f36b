package io.dlock.zookeeper;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.dlock.Capability;
import io.dlock.Lease;
import io.dlock.LockClient;
import io.dlock.LockLostException;
import io.dlock.testkit.ExclusiveLockContract;
import io.dlock.testkit.Timing;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/**
 * The exclusive lock on an embedded ZooKeeper, through the public API: the testkit's contract,
 * plus what is ZooKeeper's own (one watch per waiter, sessions, a server restart).
 */
class ZooKeeperLockIT extends ZooKeeperTestSupport implements ExclusiveLockContract {

    @Test
    void release_thirtyWaiters_wakesOneWaiterPerRelease() throws Exception {
        LockClient a = client("sessionTimeout=10s&localQueueing=false");
        LockClient b = client("sessionTimeout=10s&localQueueing=false");
        // Counted before the grant: a holder of 200 ms or more also watches its own node (so that a
        // forced release reaches it at once), one watch more while it holds, gone with its node.
        int watchesBefore = watches("herd");
        Lease held = a.lock("herd").acquire();
        int waiters = 30;
        List<CompletableFuture<Lease>> pending = new ArrayList<>();
        for (int i = 0; i < waiters; i++) {
            pending.add((i % 2 == 0 ? a : b).lock("herd").acquireAsync(Duration.ofMinutes(1)));
        }
        await().atMost(Timing.scale(Duration.ofSeconds(10)))
                .until(() -> waitersAndHolder(watches("herd") - watchesBefore, waiters));
        // Every waiter watches a different node: its immediate predecessor.
        assertThat(children("herd")).hasSize(waiters + 1);

        held.close();
        List<CompletableFuture<Lease>> waiting = new ArrayList<>(pending);
        for (int released = 1; released <= 5; released++) {
            // Exactly one waiter is granted per release, whichever stood first in the queue.
            await().atMost(Timing.scale(Duration.ofSeconds(10)))
                    .until(() -> waiting.stream().anyMatch(CompletableFuture::isDone));
            List<CompletableFuture<Lease>> granted =
                    waiting.stream().filter(CompletableFuture::isDone).toList();
            assertThat(granted).hasSize(1);
            waiting.removeAll(granted);
            int expectedWatches = waiters - released;
            await().atMost(Timing.scale(Duration.ofSeconds(5)))
                    .until(() -> watches("herd") - watchesBefore, n -> waitersAndHolder(n, expectedWatches));
            // The release fired exactly one watch; nobody else was woken or re-registered.
            assertThat(waiting).noneMatch(CompletableFuture::isDone);
            granted.get(0).get().close();
        }
        while (!waiting.isEmpty()) {
            await().atMost(Timing.scale(Duration.ofSeconds(10)))
                    .until(() -> waiting.stream().anyMatch(CompletableFuture::isDone));
            List<CompletableFuture<Lease>> granted =
                    waiting.stream().filter(CompletableFuture::isDone).toList();
            assertThat(granted).hasSize(1);
            waiting.removeAll(granted);
            granted.get(0).get().close();
        }
        // Nothing left behind: every watch fired and was removed (the last holder's own watch, set by
        // its client's sweep, may still be on its way in when its node is deleted).
        await().atMost(Timing.scale(Duration.ofSeconds(5))).until(() -> watches("herd") == watchesBefore);
        assertThat(children("herd")).isEmpty();
    }

    /** The watches on lock {@code lock}'s nodes, this test's alone. */
    private int watches(String lock) {
        return server.watchCount("/" + namespace + "/" + lock + "/");
    }

    /** {@code watches} is one per waiter, plus at most the holder's watch on its own node. */
    private static boolean waitersAndHolder(int watches, int waiters) {
        return watches == waiters || watches == waiters + 1;
    }

    @Test
    void localQueueing_thirtyWaitersOnTwoClients_oneZnodeAndOneWatchPerClient() throws Exception {
        LockClient a = client();
        LockClient b = client();
        int watchesBefore = watches("local"); // before the grant, as in the test above
        Lease held = a.lock("local").acquire();
        List<CompletableFuture<Lease>> pending = new ArrayList<>();
        for (int i = 0; i < 30; i++) {
            pending.add((i % 2 == 0 ? a : b).lock("local").acquireAsync(Duration.ofMinutes(1)));
        }
        // a's waiters queue behind a's holder inside the JVM; b's stand behind one b node.
        await().atMost(Timing.scale(Duration.ofSeconds(10)))
                .until(() -> children("local").size() == 2);
        assertThat(waitersAndHolder(watches("local") - watchesBefore, 1))
                .as("b's one watch, and a's holder's own: %s", watches("local") - watchesBefore)
                .isTrue();

        long lastToken = held.fencingToken();
        held.close();
        int[] counter = {0};
        List<CompletableFuture<Lease>> waiting = new ArrayList<>(pending);
        while (!waiting.isEmpty()) {
            await().atMost(Timing.scale(Duration.ofSeconds(10)))
                    .until(() -> waiting.stream().anyMatch(CompletableFuture::isDone));
            List<CompletableFuture<Lease>> granted =
                    waiting.stream().filter(CompletableFuture::isDone).toList();
            assertThat(granted).as("one holder at a time").hasSize(1);
            waiting.removeAll(granted);
            Lease lease = granted.get(0).get();
            assertThat(lease.fencingToken()).isGreaterThan(lastToken);
            lastToken = lease.fencingToken();
            counter[0]++;
            lease.close();
        }
        assertThat(counter[0]).isEqualTo(30);
        assertThat(children("local")).isEmpty();
        assertThat(watches("local")).isEqualTo(watchesBefore);
    }

    @Test
    void sessionExpiry_ofHolder_invalidatesLeaseAndFiresOnLostOnce() throws Exception {
        LockClient holder = client();
        LockClient other = client();
        Lease lease = holder.lock("expiry").acquire();
        AtomicInteger lostCalls = new AtomicInteger();
        AtomicReference<LockLostException> cause = new AtomicReference<>();
        lease.onLost(e -> {
            lostCalls.incrementAndGet();
            cause.set(e);
        });
        String node = "/" + namespace + "/expiry/" + children("expiry").get(0);
        long session = rawClient().exists(node, false).getEphemeralOwner();
        server.expireSession(session);
        await().atMost(Timing.scale(Duration.ofSeconds(15))).until(() -> !lease.isValid());
        await().atMost(Duration.ofSeconds(5)).until(() -> lostCalls.get() == 1);
        assertThatThrownBy(lease::checkValid)
                .isInstanceOf(LockLostException.class)
                .hasMessageContaining("expiry");
        assertThat(cause.get().lockName()).isEqualTo("expiry");
        // A listener added after the loss runs at once; the first one never runs again.
        AtomicInteger late = new AtomicInteger();
        lease.onLost(e -> late.incrementAndGet());
        assertThat(late).hasValue(1);
        try (Lease next =
                other.lock("expiry").tryAcquire(Duration.ofSeconds(10)).orElseThrow()) {
            assertThat(next.fencingToken()).isGreaterThan(lease.fencingToken());
        }
        lease.close(); // closing a lost lease is harmless
        assertThat(lostCalls).hasValue(1);
        // The client recovers: a new session serves new acquisitions.
        try (Lease again =
                holder.lock("expiry").tryAcquire(Duration.ofSeconds(10)).orElseThrow()) {
            assertThat(again.isValid()).isTrue();
        }
    }

    @Test
    void serverRestart_briefDisconnect_keepsLease() throws Exception {
        LockClient holder = client("sessionTimeout=20s");
        LockClient other = client("sessionTimeout=20s");
        Lease lease = holder.lock("brief").acquire();
        AtomicInteger lost = new AtomicInteger();
        lease.onLost(e -> lost.incrementAndGet());
        server.restart();
        await().atMost(Timing.scale(Duration.ofSeconds(15)))
                .ignoreExceptions()
                .until(() -> other.lock("brief").tryAcquire(Duration.ZERO).isEmpty());
        assertThat(lease.isValid()).isTrue();
        assertThat(lost).hasValue(0);
        lease.close();
        try (Lease next = other.lock("brief").tryAcquire(Duration.ofSeconds(10)).orElseThrow()) {
            assertThat(next.fencingToken()).isGreaterThan(lease.fencingToken());
        }
    }

    @Test
    void capabilities_areTruthful() {
        LockClient client = client();
        assertThat(client.capabilities())
                .contains(
                        Capability.EXCLUSIVE,
                        Capability.FAIR,
                        Capability.FENCING_TOKENS,
                        Capability.READ_WRITE,
                        Capability.SEMAPHORE,
                        Capability.MULTI_LOCK,
                        Capability.LOST_DETECTION,
                        Capability.CRASH_RELEASE,
                        Capability.NO_HERD)
                .doesNotContain(Capability.RENEWAL); // the session is the lease: nothing to renew
    }

    @Test
    void uncontendedCycles_afterTheFirst_sendTheCreateAndTheDeleteOnly() throws Exception {
        LockClient client = client("sessionTimeout=10s");
        awaitNoOtherTransactions();
        long lastToken;
        try (Lease first = client.lock("solo").acquire()) {
            lastToken = first.fencingToken();
        }
        int cycles = 50;
        long before = server.packetsReceived();
        for (int i = 0; i < cycles; i++) {
            try (Lease lease = client.lock("solo").acquire()) {
                assertThat(lease.fencingToken()).isGreaterThan(lastToken);
                lastToken = lease.fencingToken();
            }
        }
        long sent = server.packetsReceived() - before;
        // The pipelined read would make it 3 a cycle (150); a few more are pings.
        assertThat(sent).isBetween(2L * cycles, 2L * cycles + 4);
        assertThat(children("solo")).isEmpty();
    }

    @Test
    void uncontendedCyclesOverManyNames_fromOneClientAlone_sendTheCreateAndTheDeleteOnly() throws Exception {
        LockClient client = client("sessionTimeout=10s");
        int names = 20;
        awaitNoOtherTransactions();
        for (int warm = 0; warm < 2; warm++) {
            for (int n = 0; n < names; n++) {
                // The first pass creates the parents (writes this client does not count), the
                // second reads each queue once more, and each parent's last node was then alone.
                client.lock("many-" + n).acquire().close();
            }
        }
        int passes = 3;
        long before = server.packetsReceived();
        for (int pass = 0; pass < passes; pass++) {
            for (int n = 0; n < names; n++) {
                try (Lease lease = client.lock("many-" + n).acquire()) {
                    assertThat(lease.isValid()).isTrue();
                }
            }
        }
        long sent = server.packetsReceived() - before;
        // Between two cycles of one name, 19 other names were created and deleted, by this client
        // only: its own writes prove each new node alone. Reading the queue would make it 3 a cycle.
        assertThat(sent).isBetween(2L * names * passes, 2L * names * passes + 8);
    }

    @Test
    void threadsOfOneClientQueuedOnTheServer_overFewNames_keepEachCounterExact() throws Exception {
        // Without JVM-local queueing, the client's own threads queue under the same parents: its
        // writes then include creates under the parent whose next node it must not take for alone.
        LockClient client = client("sessionTimeout=10s&localQueueing=false");
        LockClient other = client("sessionTimeout=10s");
        int threads = 6;
        int cycles = 80;
        String[] names = {"few-0", "few-1", "few-2"};
        java.util.Map<String, io.dlock.testkit.MutualExclusionChecker> checkers = new java.util.HashMap<>();
        java.util.Map<String, List<Long>> tokens = new java.util.HashMap<>();
        for (String name : names) {
            checkers.put(name, new io.dlock.testkit.MutualExclusionChecker());
            tokens.put(name, java.util.Collections.synchronizedList(new ArrayList<>()));
        }
        List<CompletableFuture<Void>> runs = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            String who = "t" + t;
            java.util.Random random = new java.util.Random(t);
            // One thread in six is another client, now and then writing elsewhere in the ensemble.
            LockClient mine = t == 0 ? other : client;
            runs.add(CompletableFuture.runAsync(() -> {
                for (int i = 0; i < cycles; i++) {
                    String name = names[random.nextInt(names.length)];
                    try (Lease lease = mine.lock(name).acquire()) {
                        io.dlock.testkit.MutualExclusionChecker checker = checkers.get(name);
                        checker.enter(who);
                        tokens.get(name).add(lease.fencingToken());
                        checker.incrementUnsafely();
                        checker.exit(who);
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                        throw new IllegalStateException(e);
                    }
                }
            }));
        }
        CompletableFuture.allOf(runs.toArray(CompletableFuture[]::new))
                .get(Timing.scale(Duration.ofSeconds(120)).toMillis(), java.util.concurrent.TimeUnit.MILLISECONDS);
        long total = 0;
        for (String name : names) {
            assertThat(checkers.get(name).violations()).as(name).isZero();
            total += checkers.get(name).counter();
            assertThat(tokens.get(name)).as(name).isSorted().doesNotHaveDuplicates();
            assertThat(children(name)).isEmpty();
        }
        assertThat(total).isEqualTo((long) threads * cycles);
    }

    /**
     * Stops the server's removal of empty parents (every 500 ms here: a test's own parents are empty
     * between its cycles) and waits until the server has made no transaction for 700 ms, as
     * earlier tests' sessions end: each transaction of another session costs a cycle that could have
     * been read-free one read.
     */
    private void awaitNoOtherTransactions() {
        pauseContainerReaping();
        long[] last = {server.lastProcessedZxid(), System.nanoTime()};
        await().atMost(Timing.scale(Duration.ofSeconds(30)))
                .pollInterval(Duration.ofMillis(100))
                .until(() -> {
                    long now = server.lastProcessedZxid();
                    if (now != last[0]) {
                        last[0] = now;
                        last[1] = System.nanoTime();
                    }
                    return System.nanoTime() - last[1] >= Duration.ofMillis(700).toNanos();
                });
    }

    @Test
    void cycleAfterAnotherClientWrote_readsTheQueueAndIsGranted() throws Exception {
        LockClient client = client("sessionTimeout=10s");
        LockClient other = client("sessionTimeout=10s");
        long token;
        try (Lease first = client.lock("after-write").acquire()) {
            token = first.fencingToken();
        }
        try (Lease elsewhere = other.lock("elsewhere").acquire()) { // transactions outside this queue
            long before = server.packetsReceived();
            try (Lease lease = client.lock("after-write").acquire()) {
                assertThat(lease.fencingToken()).isGreaterThan(elsewhere.fencingToken());
                assertThat(lease.fencingToken()).isGreaterThan(token);
            }
            assertThat(server.packetsReceived() - before)
                    .as("create, the read it needed, delete")
                    .isBetween(3L, 5L);
        }
    }

    @Test
    void waiterThatTimedOut_isNeverTakenForALoneHolder_onItsNextTry() throws Exception {
        LockClient a = client("sessionTimeout=10s&localQueueing=false");
        LockClient b = client("sessionTimeout=10s&localQueueing=false");
        try (Lease mine = a.lock("taken").acquire()) {
            assertThat(mine.isValid()).isTrue(); // a's last node was alone and is deleted: the shortcut is armed
        }
        try (Lease held = b.lock("taken").acquire()) {
            // a's first try creates a node behind b's, reads the queue, and deletes its node; nothing
            // else happens meanwhile, so a's next node is exactly two transactions above that one.
            // Were the withdrawn waiter taken for a lone holder, a would be granted beside b here.
            for (int i = 0; i < 3; i++) {
                assertThat(a.lock("taken").tryAcquire(Duration.ZERO)).isEmpty();
            }
            assertThat(held.isValid()).isTrue();
            assertThat(children("taken")).hasSize(1);
            Optional<Lease> waited = a.lock("taken").tryAcquire(Duration.ofMillis(200));
            assertThat(waited).isEmpty();
            long heldToken = held.fencingToken();
            held.close();
            try (Lease next = a.lock("taken")
                    .tryAcquire(Timing.scale(Duration.ofSeconds(10)))
                    .orElseThrow()) {
                assertThat(next.fencingToken()).isGreaterThan(heldToken);
            }
        }
    }

    @Test
    void clientsThatRunAloneBetweenOthers_keepTheCounterExact() throws Exception {
        // Each client pauses between cycles, so it often runs cycles alone (the create-only cycle)
        // and as often finds the others queued since its last node (the read after the create).
        int clients = 3;
        int cycles = 150;
        io.dlock.testkit.MutualExclusionChecker checker = new io.dlock.testkit.MutualExclusionChecker();
        List<Long> tokens = java.util.Collections.synchronizedList(new ArrayList<>());
        List<CompletableFuture<Void>> runs = new ArrayList<>();
        for (int c = 0; c < clients; c++) {
            LockClient client = client("sessionTimeout=10s&localQueueing=false");
            String who = "c" + c;
            java.util.Random random = new java.util.Random(c);
            runs.add(CompletableFuture.runAsync(() -> {
                for (int i = 0; i < cycles; i++) {
                    try (Lease lease = client.lock("alternating").acquire()) {
                        checker.enter(who);
                        tokens.add(lease.fencingToken());
                        checker.incrementUnsafely();
                        checker.exit(who);
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                        throw new IllegalStateException(e);
                    }
                    java.util.concurrent.locks.LockSupport.parkNanos(random.nextInt(3_000_000));
                }
            }));
        }
        CompletableFuture.allOf(runs.toArray(CompletableFuture[]::new))
                .get(Timing.scale(Duration.ofSeconds(120)).toMillis(), java.util.concurrent.TimeUnit.MILLISECONDS);
        assertThat(checker.violations()).isZero();
        assertThat(checker.counter()).isEqualTo((long) clients * cycles);
        // Grants are serial, so their tokens, in the order the holders recorded them, only rise.
        assertThat(tokens).hasSize(clients * cycles).isSorted().doesNotHaveDuplicates();
        assertThat(children("alternating")).isEmpty();
    }
}
