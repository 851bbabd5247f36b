package io.dlock.jdbc;

import io.dlock.testkit.ExclusiveLockContract;
import org.junit.jupiter.api.Test;

/** The exclusive lock on PostgreSQL 15 through the public API: the testkit's contract. */
class PostgresLockIT extends PostgresTestSupport implements ExclusiveLockContract {

    @Test
    void release_toAWaiterWithAShorterLeaseThatDies_freesTheLockWithinTheWaitersLease() throws Exception {
        checkHandOverToAShortLeaseWaiterThatDies();
    }
}
