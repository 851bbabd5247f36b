package io.dlock.etcd;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.dlock.Lease;
import io.dlock.LockClient;
import io.dlock.testkit.ChildJvm;
import io.dlock.testkit.LockWorker;
import io.etcd.jetcd.KeyValue;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
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
            assertThat(keys(prefix + "/delayed/d/")).hasSize(1); // the holder's tombstone
            CompletableFuture<Lease> next = waiter.lock("delayed").acquireAsync(Duration.ofMinutes(1));
            await().until(() -> entries("delayed").size() == 2);
            String holderKey = entries("delayed").get(0);
            long killedAt = System.nanoTime();
            holder.kill();
            await().atMost(scaled(10)).pollInterval(Duration.ofMillis(20)).until(() -> !entries("delayed")
                    .contains(holderKey));
            long goneAt = System.nanoTime();
            assertThat(next).isNotDone();
            assertThat(keys(prefix + "/delayed/d/"))
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
        assertThat(keys(prefix + "/delayed/")).isEmpty();
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
        assertThat(keys(prefix + "/clean/d/")).hasSize(1); // the new holder's own
        lease.close();
        assertThat(keys(prefix + "/clean/")).isEmpty();
    }

    @Test
    void leaseRevokedWhileTheClientLives_lockStaysFreeForTheDelay() throws Exception {
        LockClient holder = client(DELAYED);
        LockClient waiter = client(DELAYED);
        Lease held = holder.lock("revoked").acquire();
        CompletableFuture<Lease> next = waiter.lock("revoked").acquireAsync(Duration.ofMinutes(1));
        await().until(() -> entries("revoked").size() == 2);
        KeyValue holderKey = kvs(prefix + "/revoked/x/").get(0);
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
        assertThat(keys(prefix + "/")).isEmpty();
    }
}
