package io.dlock.jdbc;

import io.dlock.testkit.ExclusiveLockContract;
import org.junit.jupiter.api.Test;

/** The exclusive lock on MariaDB 10.11 through the public API: the testkit's contract. */
class MariaDbLockIT extends MariaDbTestSupport implements ExclusiveLockContract {

    @Test
    void release_toAWaiterWithAShorterLeaseThatDies_freesTheLockWithinTheWaitersLease() throws Exception {
        checkHandOverToAShortLeaseWaiterThatDies();
    }
}
