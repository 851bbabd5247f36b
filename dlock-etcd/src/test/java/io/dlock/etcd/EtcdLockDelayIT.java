package io.dlock.etcd;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.dlock.Lease;
import io.dlock.LockClient;
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
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * Chubby's lock-delay ({@code lockDelay=3s}): a holder that is lost rather than released keeps the
 * lock ungranted for the delay after its entry is gone, even when its process is dead; a clean
 * release hands the lock on at once and leaves nothing behind.
 */
class EtcdLockDelayIT extends EtcdTestSupport {
    private static final String DELAYED = "leaseTime=2s&lockDelay=3s";
    private static final long DELAY_MS = 3000;

    @Test
    void holderKilled_lockStaysFreeForTheDelayAfterItsEntryIsGone() throws Exception {
        LockClient waiter = client(DELAYED);
        try (ChildJvm holder = track(ChildJvm.start(LockWorker.class, List.of("hold", uri(DELAYED), "delayed")))) {
            long holderToken =
                    Long.parseLong(holder.awaitLine("HOLDING", scaled(30)).split(" ")[1]);
            assertThat(keys(prefix + "//delayed/d/")).hasSize(1); // the holder's tombstone
            CompletableFuture<Lease> next = waiter.lock("delayed").acquireAsync(Duration.ofMinutes(1));
            await().until(() -> entries("delayed").size() == 2);
            String holderKey = entries("delayed").get(0);
            long killedAt = System.nanoTime();
            holder.kill();
            await().atMost(scaled(10)).pollInterval(Duration.ofMillis(20)).until(() -> !entries("delayed")
                    .contains(holderKey));
            long goneAt = System.nanoTime();
            assertThat(next).isNotDone();
            assertThat(keys(prefix + "//delayed/d/"))
                    .as("the dead holder's tombstone")
                    .hasSize(1);
            Lease lease = next.get(30, TimeUnit.SECONDS);
            long grantedAt = System.nanoTime();
            assertThat(TimeUnit.NANOSECONDS.toMillis(grantedAt - goneAt))
                    .as("free for the delay")
                    .isGreaterThanOrEqualTo(DELAY_MS - 100);
            assertThat(TimeUnit.NANOSECONDS.toMillis(grantedAt - killedAt))
                    .as("lease + delay + slack")
                    .isLessThan(scaled(12).toMillis());
            assertThat(lease.fencingToken()).isGreaterThan(holderToken);
            lease.close();
        }
        assertThat(keys(prefix + "//delayed/")).isEmpty();
    }

    @Test
    void cleanRelease_nextWaiterGrantedAtOnce_andNoTombstoneLeft() throws Exception {
        LockClient holder = client(DELAYED);
        LockClient waiter = client(DELAYED);
        Lease held = holder.lock("clean").acquire();
        CompletableFuture<Lease> next = waiter.lock("clean").acquireAsync(Duration.ofMinutes(1));
        await().until(() -> entries("clean").size() == 2);
        long releasedAt = System.nanoTime();
        held.close();
        Lease lease = next.get(10, TimeUnit.SECONDS);
        assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - releasedAt))
                .isLessThan(1000);
        assertThat(keys(prefix + "//clean/d/")).hasSize(1); // the new holder's own
        lease.close();
        assertThat(keys(prefix + "//clean/")).isEmpty();
    }

    @Test
    void leaseRevokedWhileTheClientLives_lockStaysFreeForTheDelay() throws Exception {
        LockClient holder = client(DELAYED);
        LockClient waiter = client(DELAYED);
        Lease held = holder.lock("revoked").acquire();
        CompletableFuture<Lease> next = waiter.lock("revoked").acquireAsync(Duration.ofMinutes(1));
        await().until(() -> entries("revoked").size() == 2);
        KeyValue holderKey = kvs(prefix + "//revoked/x/").get(0);
        inspector.getLeaseClient().revoke(holderKey.getLease()).get(10, TimeUnit.SECONDS);
        long revokedAt = System.nanoTime();
        await().atMost(scaled(5)).until(() -> !held.isValid());
        held.close(); // the lost holder's close must not remove its tombstone
        Lease lease = next.get(30, TimeUnit.SECONDS);
        assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - revokedAt)).isGreaterThanOrEqualTo(DELAY_MS);
        assertThat(lease.fencingToken()).isGreaterThan(held.fencingToken());
        lease.close();
    }

    @Test
    void holderKeyDeletedFromOutside_othersWaitTheDelay_notForAsLongAsTheHoldersClientLives() throws Exception {
        LockClient holder = client(DELAYED);
        LockClient waiter = client(DELAYED);
        Lease held = holder.lock("deleted").acquire();
        CompletableFuture<Lease> next = waiter.lock("deleted").acquireAsync(Duration.ofMinutes(1));
        await().until(() -> entries("deleted").size() == 2);
        String holderKey = entries("deleted").get(0);
        inspector.getKVClient().delete(bytes(holderKey)).get(10, TimeUnit.SECONDS);
        long deletedAt = System.nanoTime();
        await().atMost(scaled(5)).until(() -> !held.isValid());
        held.close(); // the lost holder's close must not remove its tombstone
        assertThat(keys(prefix + "//deleted/d/"))
                .as("the lost holder's tombstone")
                .hasSize(1);

        Lease lease = next.get(scaled(15).toSeconds(), TimeUnit.SECONDS);
        long grantedAt = System.nanoTime();
        assertThat(TimeUnit.NANOSECONDS.toMillis(grantedAt - deletedAt))
                .as("free for the delay")
                .isGreaterThanOrEqualTo(DELAY_MS);
        assertThat(TimeUnit.NANOSECONDS.toMillis(grantedAt - deletedAt))
                .as("the loss seen within a renewal, then the delay, with slack")
                .isLessThan(DELAY_MS + scaled(4).toMillis());
        assertThat(lease.fencingToken()).isGreaterThan(held.fencingToken());
        lease.close();
        assertThat(keys(prefix + "//deleted/")).isEmpty();
    }

    /** Closing the client used to revoke the lock-delay lease, and the lost holder's tombstone with it. */
    @Test
    void holderKeyDeletedFromOutside_thenItsClientCloses_othersStillWaitTheDelay() throws Exception {
        LockClient holder = client(DELAYED);
        LockClient waiter = client(DELAYED);
        Lease held = holder.lock("closing").acquire();
        CompletableFuture<Lease> next = waiter.lock("closing").acquireAsync(Duration.ofMinutes(1));
        await().until(() -> entries("closing").size() == 2);
        inspector.getKVClient().delete(bytes(entries("closing").get(0))).get(10, TimeUnit.SECONDS);
        long deletedAt = System.nanoTime();
        await().atMost(scaled(5)).until(() -> !held.isValid());
        holder.close();

        Lease lease = next.get(scaled(20).toSeconds(), TimeUnit.SECONDS);
        long waited = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - deletedAt);
        assertThat(waited).as("free for the delay after the loss").isGreaterThanOrEqualTo(DELAY_MS);
        // The tombstone goes with its lock-delay lease: lease time + delay + a keep-alive period.
        assertThat(waited)
                .as("the lock-delay lease's TTL, with slack")
                .isLessThan(scaled(6 + 4).toMillis());
        assertThat(lease.fencingToken()).isGreaterThan(held.fencingToken());
        lease.close();
        assertThat(keys(prefix + "//closing/")).isEmpty();
    }

    @Test
    void holderKeyDeletedFromOutside_theHoldersOwnClientWaitsTheDelayToo_andTheSlotComesBack() throws Exception {
        BackendUri parsed = BackendUri.parse(URI.create(uri(DELAYED)), LockOptions.defaults(), EtcdUri.PARAMETERS);
        EtcdBackend backend = EtcdBackend.connect(EtcdUri.from(parsed));
        LockClient holder = track(LockEngine.newClient(backend, parsed.options()));
        Lease held = holder.lock("own").acquire();
        String holderKey = entries("own").get(0);
        inspector.getKVClient().delete(bytes(holderKey)).get(10, TimeUnit.SECONDS);
        long deletedAt = System.nanoTime();
        await().atMost(scaled(5)).until(() -> !held.isValid());
        held.close();

        // Its next acquisition must not take the lost grant's tombstone for its own.
        Lease again = holder.lock("own").tryAcquire(scaled(15)).orElseThrow();
        assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - deletedAt))
                .as("free for the delay, for the lost holder's own client too")
                .isGreaterThanOrEqualTo(DELAY_MS);
        assertThat(again.fencingToken()).isGreaterThan(held.fencingToken());
        again.close();
        assertThat(keys(prefix + "//own/")).isEmpty();
        assertThat(((EtcdLockProtocol) backend.protocol()).slotsInUse())
                .as("slot bits still set")
                .isZero();
    }

    /**
     * The lease is lost after etcd committed the tombstone but before its reply arrives. Driven on
     * the real server through a proxy: requests take 600 ms to reach etcd, so the test sees the
     * entry's put land and, before the tombstone's put reaches etcd, makes every later reply take
     * 3 s; no keep-alive reply then arrives within the 2 s TTL, so the client declares the lease
     * lost (and revokes it) while the tombstone's reply is still on its way.
     */
    @Test
    void leaseLostWhileTheTombstoneWriteIsInFlight_untimedAcquireStandsInTheQueueAgain_andLaterAcquiresAreServed()
            throws Exception {
        FaultProxy proxy = track(FaultProxy.start(server.port()));
        BackendUri parsed = BackendUri.parse(
                URI.create("etcd://" + proxy.connectString() + "/" + prefix + "?leaseTime=2s&lockDelay=1s"),
                LockOptions.defaults(),
                EtcdUri.PARAMETERS);
        EtcdBackend backend = EtcdBackend.connect(EtcdUri.from(parsed));
        LockClient client = track(LockEngine.newClient(backend, parsed.options()));
        proxy.latency(FaultProxy.Direction.UPSTREAM, Duration.ofMillis(600));
        CompletableFuture<Lease> first = new CompletableFuture<>();
        CountDownLatch closeFirst = new CountDownLatch(1);
        Thread acquirer = new Thread(() -> {
            try {
                Lease held = client.lock("torn").acquire(); // untimed
                first.complete(held);
                closeFirst.await();
                held.close(); // on the thread that owns it
            } catch (Throwable e) {
                first.completeExceptionally(e);
            }
        });
        acquirer.setDaemon(true); // stays blocked forever if the acquisition is never completed
        acquirer.start();
        await().atMost(scaled(10)).pollInterval(Duration.ofMillis(5)).until(() -> !entries("torn")
                .isEmpty());
        String tornKey = entries("torn").get(0);
        // The put's reply left etcd with the put; the tombstone's put reaches etcd 600 ms after it.
        Thread.sleep(300);
        proxy.latency(FaultProxy.Direction.DOWNSTREAM, Duration.ofMillis(3000));
        await().atMost(scaled(10)).until(() -> keys(prefix + "//torn/d/").size() == 1);
        // A later acquire of the same name in this client queues behind the first in the JVM.
        CompletableFuture<Lease> second = client.lock("torn").acquireAsync(Duration.ofMinutes(1));
        // The client gives the lease up (no keep-alive answered within the TTL) and revokes it.
        await().atMost(scaled(10)).until(() -> !entries("torn").contains(tornKey));
        assertThat(first).as("not granted: the lease is lost").isNotDone();
        proxy.pass();

        Lease lease = first.get(scaled(20).toSeconds(), TimeUnit.SECONDS);
        assertThat(lease.isValid()).isTrue();
        assertThat(entries("torn")).as("the new entry only").hasSize(1).doesNotContain(tornKey);
        await().atMost(scaled(5)).untilAsserted(() -> assertThat(keys(prefix + "//torn/d/"))
                .as("the torn acquisition's tombstone taken back; the new holder's own")
                .hasSize(1));
        assertThat(second).isNotDone();
        closeFirst.countDown();
        Lease next = second.get(scaled(10).toSeconds(), TimeUnit.SECONDS);
        assertThat(next.fencingToken()).isGreaterThan(lease.fencingToken());
        next.close();
        await().atMost(scaled(5)).untilAsserted(() -> {
            assertThat(((EtcdLockProtocol) backend.protocol()).slotsInUse())
                    .as("slot bits still set")
                    .isZero();
            assertThat(keys(prefix + "//torn/")).isEmpty();
        });
    }

    @Test
    void readWriteLockAndSemaphore_withLockDelay_refusedAtOnceNamingTheCapability_nothingOnTheServer() {
        LockClient c = client(DELAYED);
        assertThat(c.capabilities())
                .contains(io.dlock.Capability.EXCLUSIVE)
                .doesNotContain(io.dlock.Capability.READ_WRITE, io.dlock.Capability.SEMAPHORE);
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> c.readWriteLock("rw"))
                .isInstanceOf(UnsupportedOperationException.class)
                .hasMessageContaining("READ_WRITE");
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> c.semaphore("s", 2))
                .isInstanceOf(UnsupportedOperationException.class)
                .hasMessageContaining("SEMAPHORE");
        assertThat(lockKeys()).isEmpty();
    }
}
