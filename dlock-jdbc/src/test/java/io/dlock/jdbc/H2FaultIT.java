package io.dlock.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import io.dlock.Lease;
import io.dlock.LockClient;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/** H2's own: the embedded in-memory default with no server at all, and the fenced-write helper. */
class H2FaultIT extends H2TestSupport {

    @Test
    void embeddedInMemory_noServer_locksWithRisingTokens() throws Exception {
        try (LockClient a =
                        LockClient.connect("jdbc:h2:mem:embedded-" + table + ";DB_CLOSE_DELAY=-1?createTable=true");
                LockClient b =
                        LockClient.connect("jdbc:h2:mem:embedded-" + table + ";DB_CLOSE_DELAY=-1?createTable=true")) {
            long previous = 0;
            for (int i = 0; i < 6; i++) {
                try (Lease lease = (i % 2 == 0 ? a : b).lock("job").acquire()) {
                    assertThat(lease.fencingToken()).isGreaterThan(previous);
                    assertThat((i % 2 == 0 ? b : a).lock("job").tryAcquire(Duration.ZERO))
                            .isEmpty();
                    previous = lease.fencingToken();
                }
            }
        }
    }

    @Test
    void databaseClock_isEpochMillisWithoutTimeZoneOffset() throws Exception {
        checkDatabaseClockIsEpochMillis(JdbcDialect.H2);
    }

    @Test
    void fencedWrite_olderTokenRefused_sameTokenAccepted() throws Exception {
        checkFencedWrites();
    }

    @Test
    void tryAcquire_zeroWaitWhileHeld_writesNoWaiterRow() throws Exception {
        checkZeroWaitWritesNothing();
    }
}
