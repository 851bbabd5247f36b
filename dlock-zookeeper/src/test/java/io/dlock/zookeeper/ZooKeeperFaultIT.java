package io.dlock.zookeeper;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.dlock.DistributedLock;
import io.dlock.Lease;
import io.dlock.LockClient;
import io.dlock.LockOptions;
import io.dlock.spi.BackendUri;
import io.dlock.spi.LockRequest;
import io.dlock.spi.Position;
import io.dlock.spi.QueueEntry;
import io.dlock.testkit.FaultProxy;
import io.dlock.testkit.FaultProxy.Direction;
import io.dlock.testkit.FencedStore;
import io.dlock.testkit.Timing;
import java.net.URI;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Network faults between a dlock client and ZooKeeper, injected by the testkit's {@link
 * FaultProxy}: lost replies, a cut-off holder, connection resets. Every test ends with no queue
 * node left on the server.
 */
class ZooKeeperFaultIT extends ZooKeeperTestSupport {

    private FaultProxy proxy;

    @AfterEach
    void closeProxy() {
        if (proxy != null) {
            proxy.close();
        }
    }

    /** A client that reaches the server through a new fault proxy. */
    private LockClient proxiedClient(String sessionTimeout) {
        proxy = FaultProxy.start(server.port());
        return track(LockClient.connect(
                "zookeeper://" + proxy.connectString() + "/" + namespace + "?sessionTimeout=" + sessionTimeout));
    }

    @Test
    void acquire_replyToCreateLost_adoptsItsOwnNodeAndLeavesNoOrphan() throws Exception {
        LockClient client = proxiedClient("4s");
        LockClient other = client();
        Lease first = other.lock("adopt").acquire(); // keeps the lock's parent node in place
        String firstNode = children("adopt").get(0);
        proxy.blackhole(Direction.DOWNSTREAM); // the create reaches the server, its reply does not come back
        CompletableFuture<Lease> acquiring = client.lock("adopt").acquireAsync(Timing.scale(Duration.ofSeconds(30)));

        await().atMost(Timing.scale(Duration.ofSeconds(5)))
                .until(() -> children("adopt").size() == 2);
        String created = children("adopt").stream()
                .filter(c -> !c.equals(firstNode))
                .findFirst()
                .orElseThrow();
        assertThat(acquiring).isNotDone();
        proxy.pass(); // the silent connection times out; the client reconnects within its session
        first.close();

        Lease lease = acquiring.get(Timing.scale(Duration.ofSeconds(20)).toMillis(), TimeUnit.MILLISECONDS);
        assertThat(lease.isValid()).isTrue();
        assertThat(lease.fencingToken()).isGreaterThan(first.fencingToken());
        assertThat(children("adopt")).containsExactly(created); // adopted, not created twice
        assertThat(other.lock("adopt").tryAcquire(Duration.ZERO)).isEmpty();
        lease.close();
        try (Lease next = other.lock("adopt")
                .tryAcquire(Timing.scale(Duration.ofSeconds(5)))
                .orElseThrow()) {
            assertThat(next.fencingToken()).isGreaterThan(lease.fencingToken());
        }
        assertThat(children("adopt")).isEmpty();
    }

    @Test
    void findOwnEntry_connectionLostWhileLooking_retriesOnceReconnectedAndFindsIt() throws Exception {
        proxy = FaultProxy.start(server.port());
        BackendUri uri = BackendUri.parse(
                URI.create("zookeeper://" + proxy.connectString() + "/" + namespace + "?sessionTimeout=8s"),
                LockOptions.defaults(),
                Set.of());
        ZooKeeperBackend backend = track(ZooKeeperBackend.connect(ZooKeeperUri.from(uri)));
        String id = UUID.randomUUID().toString();
        Position held = backend.protocol()
                .enqueue(LockRequest.exclusive("find", id))
                .toCompletableFuture()
                .get(10, TimeUnit.SECONDS);

        // The lookup's request is dropped; the client times out at 2/3 of the 8 s session and
        // reconnects after a random pause of up to 1 s, well before the server would expire it.
        proxy.blackhole(Direction.BOTH);
        CompletableFuture<Optional<QueueEntry>> found =
                backend.protocol().findOwnEntry("find", id).toCompletableFuture();
        Thread.sleep(2_000);
        proxy.pass(); // new connections work: the client reconnects within its session

        // A lookup that failed with CONNECTIONLOSS used to end here ("not found" or an error), so the
        // caller created a second node that queued behind its own orphan.
        assertThat(found.get(Timing.scale(Duration.ofSeconds(15)).toMillis(), TimeUnit.MILLISECONDS))
                .hasValue(held.entry());
        backend.protocol().release(held.entry()).toCompletableFuture().get(10, TimeUnit.SECONDS);
        assertThat(children("find")).isEmpty();
    }

    @Test
    void sessionExpiry_ofWaiter_requeuesOnceAndLeavesNoOrphanAheadOfItself() throws Exception {
        LockClient holder = client();
        LockClient waiter = client("sessionTimeout=4s");
        FencedStore store = FencedStore.fenced();
        for (int round = 0; round < 3; round++) { // bounded: three expiries
            Lease held = holder.lock("requeue").acquire();
            CompletableFuture<Lease> waiting =
                    waiter.lock("requeue").acquireAsync(Timing.scale(Duration.ofSeconds(20)));
            await().atMost(Timing.scale(Duration.ofSeconds(5)))
                    .until(() -> children("requeue").size() == 2);
            String waiterNode = "/" + namespace + "/requeue/"
                    + children("requeue").stream()
                            .max(java.util.Comparator.comparingInt(LockNodes::sequence))
                            .orElseThrow(); // the later one
            long session = rawClient().exists(waiterNode, false).getEphemeralOwner();

            // The waiter's session ends: its node goes, and it queues again in a new session (the
            // new handle has no session id until it connects; the entry must not be recorded with one).
            server.expireSession(session);
            String oldName = waiterNode.substring(waiterNode.lastIndexOf('/') + 1);
            await().atMost(Timing.scale(Duration.ofSeconds(10)))
                    .until(() -> !children("requeue").contains(oldName)
                            && children("requeue").size() >= 2);
            // Holder's node and the waiter's one new node: a second, orphaned entry would show up by now.
            await().during(Duration.ofMillis(500))
                    .atMost(Timing.scale(Duration.ofSeconds(5)))
                    .until(() -> children("requeue").size() == 2);
            held.close();

            Lease lease = waiting.get(Timing.scale(Duration.ofSeconds(20)).toMillis(), TimeUnit.MILLISECONDS);
            assertThat(store.write("waiter", lease.fencingToken(), round)).isTrue();
            assertThat(children("requeue")).hasSize(1);
            lease.close();
            await().atMost(Timing.scale(Duration.ofSeconds(5)))
                    .until(() -> children("requeue").isEmpty());
        }
    }

    @Test
    void blackhole_holderCutOff_leaseTurnsInvalidOnLostOnceAndOthersTakeOver() throws Exception {
        LockClient holder = proxiedClient("2s");
        LockClient other = client("sessionTimeout=2s");
        Lease lease = holder.lock("cut").acquire();
        AtomicInteger lost = new AtomicInteger();
        lease.onLost(e -> lost.incrementAndGet());
        long cutAt = System.nanoTime();

        proxy.blackhole(Direction.BOTH);
        // The other client queues at once; when the server has expired the holder's session and
        // grants it the lock, the holder must already know its lease is invalid.
        AtomicBoolean holderValidAtTakeover = new AtomicBoolean(true);
        CompletableFuture<Lease> takeover = other.lock("cut")
                .acquireAsync(Timing.scale(Duration.ofSeconds(10)))
                .whenComplete((l, e) -> holderValidAtTakeover.set(lease.isValid()));

        // The client notices within the session timeout: no reply for 2/3 of it, then 1/6 more.
        await().atMost(Timing.scale(Duration.ofSeconds(4))).until(() -> !lease.isValid());
        Duration detected = Duration.ofNanos(System.nanoTime() - cutAt);
        assertThat(detected).isLessThan(Timing.scale(Duration.ofSeconds(4)));
        await().atMost(Duration.ofSeconds(2)).until(() -> lost.get() == 1);
        Lease next = takeover.get(Timing.scale(Duration.ofSeconds(10)).toMillis(), TimeUnit.MILLISECONDS);
        assertThat(next.fencingToken()).isGreaterThan(lease.fencingToken());
        assertThat(holderValidAtTakeover)
                .as("holder's lease still valid when the other client got the lock")
                .isFalse();

        proxy.pass();
        lease.close(); // a lost lease closes quietly
        next.close();
        try (Lease again = holder.lock("cut")
                .tryAcquire(Timing.scale(Duration.ofSeconds(15)))
                .orElseThrow()) {
            assertThat(again.isValid()).isTrue();
        }
        assertThat(lost).hasValue(1);
        await().atMost(Timing.scale(Duration.ofSeconds(5)))
                .until(() -> children("cut").isEmpty());
    }

    @Test
    void resetConnections_whileWorkersContend_exclusionHoldsAndNoNodeIsLeft() throws Exception {
        LockClient proxied = proxiedClient("4s");
        LockClient direct = client("sessionTimeout=4s");
        FencedStore store = FencedStore.fenced();
        AtomicBoolean stop = new AtomicBoolean();
        ExecutorService pool = Executors.newFixedThreadPool(2);
        try {
            List<Future<Integer>> workers = List.of(
                    pool.submit(() -> work(proxied.lock("reset"), "proxied", store, stop)),
                    pool.submit(() -> work(direct.lock("reset"), "direct", store, stop)));
            for (int i = 0; i < 8; i++) { // bounded: 8 resets, 250 ms apart
                Thread.sleep(250);
                proxy.resetConnections();
            }
            Thread.sleep(1_000); // let the proxied client reconnect and work again
            stop.set(true);
            int done = 0;
            for (Future<Integer> w : workers) {
                done += w.get(Timing.scale(Duration.ofSeconds(40)).toMillis(), TimeUnit.MILLISECONDS);
            }
            FencedStore.Access last = store.accesses().get(store.accessCount() - 1);
            assertThat(done).isPositive();
            assertThat(store.check().acceptedOverlaps()).isZero();
            assertThat(store.check().lostUpdates()).isZero();
            assertThat(store.check().staleWritesAccepted()).isZero();
            assertThat(store.value()).isEqualTo(store.acceptedWrites());
            assertThat(last.accepted()).isTrue();
        } finally {
            stop.set(true);
            pool.shutdownNow();
            assertThat(pool.awaitTermination(30, TimeUnit.SECONDS)).isTrue();
        }
        await().atMost(Timing.scale(Duration.ofSeconds(10)))
                .until(() -> children("reset").isEmpty());
    }

    /** Read-modify-write under the lock until told to stop; errors from resets are retried. */
    private static int work(DistributedLock lock, String name, FencedStore store, AtomicBoolean stop)
            throws InterruptedException {
        int done = 0;
        while (!stop.get()) {
            Optional<Lease> acquired;
            try {
                acquired = lock.tryAcquire(Duration.ofSeconds(5));
            } catch (RuntimeException e) { // connection trouble while the proxy resets: try again
                Thread.sleep(20);
                continue;
            }
            if (acquired.isEmpty()) {
                continue;
            }
            try (Lease lease = acquired.get()) {
                long token = lease.fencingToken();
                var value = store.read(name, token);
                if (value.isPresent() && store.write(name, token, value.getAsLong() + 1)) {
                    done++;
                }
            }
        }
        return done;
    }
}
