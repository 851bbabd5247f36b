package io.dlock.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.dlock.Lease;
import io.dlock.LockClient;
import io.dlock.testkit.ExclusiveLockContract;
import java.sql.Connection;
import java.sql.Statement;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** The exclusive lock on MariaDB 10.11 through the public API: the testkit's contract. */
class MariaDbLockIT extends MariaDbTestSupport implements ExclusiveLockContract {

    @Test
    void release_toAWaiterWithAShorterLeaseThatDies_freesTheLockWithinTheWaitersLease() throws Exception {
        checkHandOverToAShortLeaseWaiterThatDies();
    }

    /**
     * The first try of an acquisition reads the lock row's {@code queued} flag, not the waiters
     * table ({@link JdbcStatements#grantFree}): a waiter sets it, the grant that leaves no one
     * waiting clears it, and one a waiter that gave up left behind costs a statement, not a grant.
     */
    @Test
    void queuedFlag_setByWaiters_clearedByTheLastGrant_andAStaleOneDelaysNoOne() throws Exception {
        LockClient a = client();
        LockClient b = client();
        Lease held = a.lock("q").acquire();
        assertThat(queued("q")).as("no one waits").isZero();

        CompletableFuture<Lease> waiting = b.lock("q").acquireAsync(scaled(30));
        await().atMost(scaled(10)).until(() -> queued("q") == 1);
        held.close();
        Lease handed = waiting.get(10, TimeUnit.SECONDS);
        assertThat(handed.fencingToken()).isGreaterThan(held.fencingToken());
        assertThat(queued("q"))
                .as("cleared by the grant that left no one waiting")
                .isZero();

        // A waiter that gives up leaves the flag set: the next first try still gets the free lock.
        assertThat(a.lock("q").tryAcquire(Duration.ofMillis(300))).isEmpty();
        assertThat(queued("q")).isEqualTo(1);
        handed.close();
        Lease again = a.lock("q").tryAcquire(Duration.ZERO).orElseThrow();
        assertThat(queued("q")).as("the stale flag is cleared").isZero();
        again.close();
    }

    /** A newcomer's first try does not pass a waiter that stands while the lock is free (fair). */
    @Test
    void firstTry_onAFreeLockWithAWaiterStanding_waitsItsTurn() throws Exception {
        LockClient c = client();
        c.lock("w").acquire().close(); // the lock row
        try (Connection conn = connect();
                Statement s = conn.createStatement()) {
            // What a waiter of another client does, between the release and its own grant.
            s.executeUpdate("INSERT INTO " + table + "_waiters (name, acquisition, client, expires_ms)"
                    + " VALUES ('w', 'other-acq', 'other-client', " + JdbcDialect.MARIADB.now + " + 60000)");
            s.executeUpdate("UPDATE " + table + " SET queued = 1 WHERE name = 'w'");
        }
        assertThat(c.lock("w").tryAcquire(Duration.ZERO))
                .as("a waiter stands first")
                .isEmpty();
        assertThat(client("fair=false").lock("w").tryAcquire(Duration.ZERO))
                .as("not fair: takes the free lock")
                .hasValueSatisfying(Lease::close);

        try (Connection conn = connect();
                Statement s = conn.createStatement()) {
            s.executeUpdate("DELETE FROM " + table + "_waiters WHERE acquisition = 'other-acq'");
        }
        Lease l = c.lock("w").tryAcquire(Duration.ZERO).orElseThrow();
        assertThat(queued("w")).isZero();
        l.close();
    }

    private long queued(String name) throws Exception {
        return queryLong("SELECT queued FROM " + table + " WHERE name = '" + name + "'");
    }
}
