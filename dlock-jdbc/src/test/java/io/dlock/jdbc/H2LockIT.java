package io.dlock.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import io.dlock.Lease;
import io.dlock.LockClient;
import io.dlock.testkit.ExclusiveLockContract;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;

/** The exclusive lock on H2 (in-process, over its TCP server so child JVMs share it): the testkit's contract. */
class H2LockIT extends H2TestSupport implements ExclusiveLockContract {

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
}
