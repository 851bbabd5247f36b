package io.dlock.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.dlock.Lease;
import io.dlock.LockClient;
import io.dlock.testkit.ExclusiveLockContract;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** The exclusive lock on H2 (in-process, over its TCP server so child JVMs share it): the testkit's contract. */
class H2LockIT extends H2TestSupport implements ExclusiveLockContract {

    @Test
    void release_toAWaiterWithAShorterLeaseThatDies_freesTheLockWithinTheWaitersLease() throws Exception {
        checkHandOverToAShortLeaseWaiterThatDies();
    }

    /**
     * In the same JVM, without the TCP hop, a waiter's first attempt is still in flight when its
     * caller cancels: the withdrawal must wait for that attempt, or the waiter row (or the grant) it
     * makes blocks the lock until its lease runs out.
     */
    @Test
    void acquireAsync_cancelledWhileItsFirstAttemptIsInFlight_blocksNobody() throws Exception {
        String uri = "jdbc:h2:mem:cancel-race;DB_CLOSE_DELAY=-1?createTable=true&leaseTime=30s";
        for (int round = 0; round < 40; round++) {
            String name = "race-" + round;
            try (LockClient holder = LockClient.connect(uri);
                    LockClient waiter = LockClient.connect(uri)) {
                Lease held = holder.lock(name).acquire();
                CompletableFuture<Lease> async = waiter.lock(name).acquireAsync(Duration.ofMinutes(1));
                async.cancel(true);
                held.close();
                Optional<Lease> next = holder.lock(name).tryAcquire(scaled(5));
                assertThat(next).as("round %d: the lock is free again", round).isPresent();
                next.get().close();
            }
        }
    }

    /**
     * A waiter's grant attempt takes the row, and its delete of the waiter row is slow (a busy
     * database). The client's poll sees the row owned by that acquisition meanwhile and completes
     * the wait with it; the attempt's reply then brings the same grant. That is the caller's lease:
     * it used to be taken for a late grant of an ended acquisition and released, and the holder
     * lost its lock at its next renewal (found while tracing the state CI's {@code H2InspectIT}
     * watch saw: the new holder with its own waiter row still there).
     */
    @Test
    void grantSeenByThePollWhileItsReplyIsSlow_staysHeld() throws Exception {
        StatementGate gate = new StatementGate(new JdbcStatements(JdbcDialect.H2, table).deleteWaiter);
        LockClient a = client();
        LockClient b = clientThrough(gate);
        Lease held = a.lock("slow").acquire();
        CompletableFuture<Lease> pending = b.lock("slow").acquireAsync(Duration.ofMinutes(1));
        await().atMost(scaled(10)).until(() -> entries("slow").size() == 2);
        String waiter = entries("slow").get(1);
        gate.close();
        held.close();
        assertThat(gate.awaitHeld(scaled(10)))
                .as("the waiter's grant took the row and its delete of the waiter row is held")
                .isTrue();
        Lease granted = pending.get(scaled(10).toMillis(), TimeUnit.MILLISECONDS);
        gate.open();
        await().atMost(scaled(5)).until(() -> entries("slow").equals(List.of(waiter)));
        await().during(Duration.ofSeconds(1)).atMost(scaled(5)).until(() -> entries("slow")
                .equals(List.of(waiter)));
        assertThat(granted.isValid()).isTrue();
        assertThat(a.lock("slow").tryAcquire(Duration.ZERO)).isEmpty();
        granted.close();
        try (Lease next = a.lock("slow").tryAcquire(scaled(5)).orElseThrow()) {
            assertThat(next.fencingToken()).isGreaterThan(granted.fencingToken());
        }
    }
}
