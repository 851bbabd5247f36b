package io.dlock.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.dlock.Lease;
import io.dlock.LockClient;
import io.dlock.LockLostException;
import io.dlock.testkit.ChildJvm;
import io.dlock.testkit.LockWorker;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * Leases on Redis with the engine's renewal: kept while open, lost (with {@code onLost}) before they
 * run out when Redis cannot be reached, expiring at {@code leaseTime} with renewal off, and a
 * holder paused past its lease overtaken by a later, higher token.
 */
class RedisLeaseIT extends RedisTestSupport {

    @Test
    void renewal_keepsTheLockForThreeLeaseTimes() throws Exception {
        LockClient holder = client("leaseTime=1s");
        LockClient other = client("leaseTime=1s");
        List<LockLostException> lost = new CopyOnWriteArrayList<>();
        try (Lease lease = holder.lock("renewed").acquire()) {
            lease.onLost(lost::add);
            long until = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(3300);
            int attempts = 0;
            while (System.nanoTime() < until) { // bounded: about 3.3 s
                assertThat(other.lock("renewed").tryAcquire(Duration.ofMillis(300)))
                        .isEmpty();
                attempts++;
            }
            assertThat(attempts).isGreaterThanOrEqualTo(5);
            assertThat(lease.isValid()).isTrue();
            assertThat(lost).isEmpty();
        }
        try (Lease next = other.lock("renewed").tryAcquire(scaled(5)).orElseThrow()) {
            assertThat(next.isValid()).isTrue();
        }
    }

    @Test
    void renewalOff_theGrantExpiresAtLeaseTimeAndOnLostFires() throws Exception {
        LockClient holder = client("leaseTime=1s&renewal=false");
        LockClient other = client("leaseTime=1s");
        List<LockLostException> lost = new CopyOnWriteArrayList<>();
        Lease lease = holder.lock("expiring").acquire();
        lease.onLost(lost::add);
        long grantedAt = System.nanoTime();
        CompletableFuture<Lease> next = other.lock("expiring").acquireAsync(scaled(10));
        Lease taken = next.get(10, TimeUnit.SECONDS);
        long tookMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - grantedAt);
        assertThat(tookMs).as("not before the lease ran out").isGreaterThanOrEqualTo(900);
        assertThat(lost).hasSize(1);
        assertThat(lease.isValid()).isFalse();
        assertThat(taken.fencingToken()).isGreaterThan(lease.fencingToken());
        taken.close();
        lease.close(); // harmless: the entry is gone
    }

    @Test
    void redisUnreachable_leaseTurnsInvalidAndOnLostFiresOnce_thenTheLockWorksAgain() throws Exception {
        LockClient holder = client("leaseTime=1500ms&connectTimeout=1s");
        List<LockLostException> lost = new CopyOnWriteArrayList<>();
        Lease lease = holder.lock("frozen").acquire();
        lease.onLost(lost::add);
        server.pause(); // SIGSTOP: no reply, no disconnect
        try {
            await().atMost(scaled(5)).until(() -> lost.size() == 1);
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
    void holderPausedPastItsLease_anotherAcquires_andThePausedLeaseIsInvalidWithALowerToken() throws Exception {
        LockClient other = client("leaseTime=1s");
        try (ChildJvm holder =
                track(ChildJvm.start(LockWorker.class, List.of("hold-check", uri("leaseTime=1s"), "paused")))) {
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
