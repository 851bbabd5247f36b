package io.dlock.etcd;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.dlock.Lease;
import io.dlock.LockClient;
import io.dlock.LockLostException;
import io.dlock.LockOptions;
import io.dlock.core.LockEngine;
import io.dlock.spi.BackendUri;
import io.dlock.testkit.ChildJvm;
import io.dlock.testkit.FaultProxy;
import io.dlock.testkit.LockWorker;
import io.etcd.jetcd.KeyValue;
import java.net.URI;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * The client's etcd lease: kept alive while locks are held, lost (with {@code onLost}) when etcd
 * revokes it or cannot be reached, never used again once lost, and a holder paused past its lease
 * overtaken by a later, higher token.
 */
class EtcdLeaseIT extends EtcdTestSupport {

    /**
     * A release whose delete failed past the retry budget was dropped ("it goes with the lease"), but
     * the lease is the client's and kept alive: the key blocked everyone else until the client closed.
     */
    @Test
    void release_deleteFailsPastTheRetryBudgetThenRecovers_lockFreeAgainWhileTheClientLives() throws Exception {
        BackendUri parsed = BackendUri.parse(
                URI.create(uri("retryBaseSleep=10ms&retryMaxSleep=100ms&retryMaxRetries=2")),
                LockOptions.defaults(),
                EtcdUri.PARAMETERS);
        EtcdBackend backend = EtcdBackend.connect(EtcdUri.from(parsed));
        LockClient holder = track(LockEngine.newClient(backend, parsed.options()));
        LockClient other = client("");
        EtcdLockProtocol protocol = (EtcdLockProtocol) backend.protocol();
        Lease held = holder.lock("stuck").acquire();
        protocol.failingDeletes.set(2 * 4 + 5); // the budget (4 attempts per retry) and five more
        held.close();

        Lease next = other.lock("stuck").tryAcquire(scaled(20)).orElseThrow();
        assertThat(protocol.failingDeletes.get()).as("injected failures left").isLessThanOrEqualTo(0);
        assertThat(next.fencingToken()).isGreaterThan(held.fencingToken());
        assertThat(held.isValid()).isFalse();
        next.close();
    }

    @Test
    void keepAlive_keepsTheLockForThreeLeaseTimes() throws Exception {
        LockClient holder = client("leaseTime=2s");
        LockClient other = client("leaseTime=2s");
        List<LockLostException> lost = new CopyOnWriteArrayList<>();
        try (Lease lease = holder.lock("kept").acquire()) {
            lease.onLost(lost::add);
            long until = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(6500);
            int attempts = 0;
            while (System.nanoTime() < until) { // bounded: about 6.5 s
                assertThat(other.lock("kept").tryAcquire(Duration.ofMillis(300)))
                        .isEmpty();
                attempts++;
            }
            assertThat(attempts).isGreaterThanOrEqualTo(10);
            assertThat(lease.isValid()).isTrue();
            assertThat(lost).isEmpty();
        }
        try (Lease next = other.lock("kept").tryAcquire(scaled(5)).orElseThrow()) {
            assertThat(next.isValid()).isTrue();
        }
    }

    @Test
    void leaseRevokedBehindTheClientsBack_onLostAtOnce_thenANewLeaseServes() throws Exception {
        LockClient holder = client(""); // 30 s lease: expiry cannot be what the test sees
        List<LockLostException> lost = new CopyOnWriteArrayList<>();
        Lease lease = holder.lock("revoked").acquire();
        lease.onLost(lost::add);
        KeyValue key = kvs(prefix + "//revoked/x/").get(0);
        long revokedAt = System.nanoTime();
        inspector.getLeaseClient().revoke(key.getLease()).get(10, TimeUnit.SECONDS);
        await().atMost(scaled(5)).until(() -> lost.size() == 1);
        long tookMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - revokedAt);
        assertThat(tookMs)
                .as("noticed within about a keep-alive period")
                .isLessThan(scaled(3).toMillis());
        assertThat(lease.isValid()).isFalse();
        lease.close();
        try (Lease again = holder.lock("revoked").tryAcquire(scaled(10)).orElseThrow()) {
            assertThat(again.fencingToken()).isGreaterThan(lease.fencingToken());
            assertThat(kvs(prefix + "//revoked/x/").get(0).getLease()).isNotEqualTo(key.getLease());
        }
        assertThat(lost).hasSize(1);
    }

    @Test
    void holderKeyDeletedBehindItsBack_leaseInvalidAndNextClientAcquires() throws Exception {
        LockClient holder = client("leaseTime=3s");
        List<LockLostException> lost = new CopyOnWriteArrayList<>();
        Lease lease = holder.lock("deleted").acquire();
        lease.onLost(lost::add);
        inspector.getKVClient().delete(bytes(entries("deleted").get(0))).get(10, TimeUnit.SECONDS);
        await().atMost(scaled(10)).until(() -> lost.size() == 1);
        assertThat(lease.isValid()).isFalse();
        try (Lease next = client("").lock("deleted").tryAcquire(Duration.ZERO).orElseThrow()) {
            assertThat(next.fencingToken()).isGreaterThan(lease.fencingToken());
        }
        lease.close();
    }

    @Test
    void oneOfManyHeldKeysDeleted_onlyThatGrantLost_andARoundsRenewalsShareOneTransaction() throws Exception {
        LockClient holder = client("leaseTime=3s"); // renewal every second
        int n = 20;
        List<Lease> leases = new java.util.ArrayList<>();
        List<LockLostException> lost = new CopyOnWriteArrayList<>();
        // At once, so that each renewal round's renewals fall in one tick of the engine's renewer.
        List<java.util.concurrent.CompletableFuture<Lease>> acquiring = new java.util.ArrayList<>();
        for (int i = 0; i < n; i++) {
            acquiring.add(holder.lock("many-" + i).acquireAsync(scaled(10)));
        }
        for (java.util.concurrent.CompletableFuture<Lease> f : acquiring) {
            Lease l = f.get(20, TimeUnit.SECONDS);
            l.onLost(lost::add);
            leases.add(l);
        }
        double txns = metric("grpc_server_started_total{grpc_method=\"Txn\"");
        inspector.getKVClient().delete(bytes(entries("many-7").get(0))).get(10, TimeUnit.SECONDS);
        await().atMost(scaled(10)).until(() -> lost.size() == 1);
        assertThat(lost.get(0).lockName()).isEqualTo("many-7");
        assertThat(leases.get(7).isValid()).isFalse();
        // Three renewal rounds (a second each): nobody else is lost, and the renewals of a round
        // share one key-check transaction instead of one request per held lock.
        Thread.sleep(scaled(3).toMillis() + 500);
        assertThat(lost).hasSize(1);
        for (int i = 0; i < n; i++) {
            assertThat(leases.get(i).isValid()).as("lock many-%d", i).isEqualTo(i != 7);
        }
        assertThat(metric("grpc_server_started_total{grpc_method=\"Txn\"") - txns)
                .as("transactions while %d locks were held through three renewal rounds", n)
                .isLessThan(n);
        leases.forEach(Lease::close);
    }

    /** The sum of the server's Prometheus samples whose line starts with {@code name}. */
    static double metric(String name) throws Exception {
        java.net.HttpURLConnection c = (java.net.HttpURLConnection)
                new java.net.URL("http://" + server.connectString() + "/metrics").openConnection();
        double sum = 0;
        try (java.io.BufferedReader r = new java.io.BufferedReader(
                new java.io.InputStreamReader(c.getInputStream(), java.nio.charset.StandardCharsets.UTF_8))) {
            for (String line = r.readLine(); line != null; line = r.readLine()) {
                if (line.startsWith(name)) {
                    sum += Double.parseDouble(line.substring(line.lastIndexOf(' ') + 1));
                }
            }
        } finally {
            c.disconnect();
        }
        return sum;
    }

    @Test
    void renewalOff_theGrantRunsOutAtTheLeaseTimeAndOnLostFires() throws Exception {
        LockClient holder = client("leaseTime=2s&renewal=false");
        LockClient other = client("leaseTime=2s");
        List<LockLostException> lost = new CopyOnWriteArrayList<>();
        long before = System.nanoTime();
        Lease lease = holder.lock("expiring").acquire();
        lease.onLost(lost::add);
        CompletableFuture<Lease> next = other.lock("expiring").acquireAsync(scaled(15));
        Lease taken = next.get(20, TimeUnit.SECONDS);
        long tookMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - before);
        assertThat(tookMs).as("not before the lease ran out").isGreaterThanOrEqualTo(1900);
        await().atMost(scaled(5)).until(() -> lost.size() == 1);
        assertThat(lease.isValid()).isFalse();
        assertThat(taken.fencingToken()).isGreaterThan(lease.fencingToken());
        taken.close();
        lease.close(); // harmless: the entry is gone
    }

    @Test
    void etcdUnreachable_leaseTurnsInvalidAndOnLostFiresOnce_thenTheLockWorksAgain() throws Exception {
        LockClient holder = client("leaseTime=2s&connectTimeout=1s");
        List<LockLostException> lost = new CopyOnWriteArrayList<>();
        Lease lease = holder.lock("frozen").acquire();
        lease.onLost(lost::add);
        long pausedAt = System.nanoTime();
        server.pause(); // SIGSTOP: no reply, no disconnect
        try {
            await().atMost(scaled(6)).until(() -> lost.size() == 1);
            // Lost before etcd could have expired the lease (2 s after the last keep-alive).
            assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - pausedAt))
                    .isLessThan(2000);
            assertThat(lease.isValid()).isFalse();
        } finally {
            server.resume();
        }
        lease.close();
        try (Lease again = holder.lock("frozen").tryAcquire(scaled(10)).orElseThrow()) {
            assertThat(again.fencingToken()).isGreaterThan(lease.fencingToken());
        }
        assertThat(lost).hasSize(1);
    }

    @Test
    void steadyLatencyUnderAThirdOfTheLease_lateKeepAliveRepliesCount_theLockIsHeldForFourLeaseTimes()
            throws Exception {
        FaultProxy proxy = track(FaultProxy.start(server.port()));
        LockClient holder = track(LockClient.connect(throughProxy(proxy, "leaseTime=2s")));
        LockClient other = client("leaseTime=2s");
        List<LockLostException> lost = new CopyOnWriteArrayList<>();
        Lease lease = holder.lock("slow").acquire();
        lease.onLost(lost::add);
        long etcdLease = kvs(prefix + "//slow/x/").get(0).getLease();
        // 600 ms round trips: more than a keep-alive tick (333 ms), under a third of the TTL.
        proxy.latency(FaultProxy.Direction.BOTH, Duration.ofMillis(300));
        long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(8);
        int attempts = 0;
        while (System.nanoTime() < until) { // bounded: about 8 s
            assertThat(other.lock("slow").tryAcquire(Duration.ofMillis(300)))
                    .as("the lock is still held")
                    .isEmpty();
            attempts++;
        }
        assertThat(attempts).isGreaterThanOrEqualTo(10);
        assertThat(lost).isEmpty();
        assertThat(lease.isValid()).isTrue();
        assertThat(kvs(prefix + "//slow/x/"))
                .as("the holder's key, still on the lease it was put on")
                .singleElement()
                .satisfies(kv -> assertThat(kv.getLease()).isEqualTo(etcdLease));
        lease.close();
        try (Lease next = other.lock("slow").tryAcquire(scaled(5)).orElseThrow()) {
            assertThat(next.fencingToken()).isGreaterThan(lease.fencingToken());
        }
    }

    @Test
    void etcdCutOffAfterSlowRoundTrips_leaseDeclaredLostWhileEtcdStillHoldsIt() throws Exception {
        FaultProxy proxy = track(FaultProxy.start(server.port()));
        LockClient holder = track(LockClient.connect(throughProxy(proxy, "leaseTime=2s&connectTimeout=1s")));
        List<Boolean> keyOnEtcdAtLoss = new CopyOnWriteArrayList<>();
        Lease lease = holder.lock("cut").acquire();
        lease.onLost(e -> keyOnEtcdAtLoss.add(!kvs(prefix + "//cut/x/").isEmpty()));
        proxy.latency(FaultProxy.Direction.BOTH, Duration.ofMillis(300));
        // A lease time and a half of slow, but answered, keep-alives: valid throughout.
        await().during(Duration.ofSeconds(3)).atMost(Duration.ofSeconds(4)).until(lease::isValid);
        long cutAt = System.nanoTime();
        proxy.blackhole(FaultProxy.Direction.BOTH); // a partition: no reply, no disconnect
        await().atMost(scaled(6)).until(() -> keyOnEtcdAtLoss.size() == 1);
        assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - cutAt))
                .as("lost within the TTL of the last keep-alive etcd could have answered")
                .isLessThan(2000);
        assertThat(keyOnEtcdAtLoss)
                .as("etcd still held the key when the client gave the lease up")
                .containsExactly(true);
        assertThat(lease.isValid()).isFalse();
        lease.close();
        // etcd expires the lease on its own (the revoke went into the partition).
        await().atMost(scaled(10)).until(() -> kvs(prefix + "//cut/").isEmpty());
    }

    /** The test's URI, with the proxy in front of etcd. */
    String throughProxy(FaultProxy proxy, String query) {
        return "etcd://" + proxy.connectString() + "/" + prefix + "?" + query;
    }

    @Test
    void holderPausedPastItsLease_anotherAcquires_andThePausedLeaseIsInvalidWithALowerToken() throws Exception {
        LockClient other = client("leaseTime=2s");
        try (ChildJvm holder =
                track(ChildJvm.start(LockWorker.class, List.of("hold-check", uri("leaseTime=2s"), "paused")))) {
            long pausedToken =
                    Long.parseLong(holder.awaitLine("HOLDING", scaled(30)).split(" ")[1]);
            holder.pause();
            Optional<Lease> taken;
            try {
                taken = other.lock("paused").tryAcquire(scaled(10));
                assertThat(taken).isPresent();
                assertThat(taken.get().fencingToken()).isGreaterThan(pausedToken);
            } finally {
                holder.resume();
            }
            holder.send("check");
            assertThat(holder.awaitLine("VALID", scaled(10))).isEqualTo("VALID false");
            taken.get().close();
        }
    }
}
