package io.dlock.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.dlock.Lease;
import io.dlock.LockBackendException;
import io.dlock.LockClient;
import io.dlock.LockOptions;
import io.dlock.testkit.MariaDbServer;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** MariaDB's own: credentials, a missing table, the fenced-write helper, the database clock. */
class MariaDbFaultIT extends MariaDbTestSupport {

    @Test
    void connect_wrongPassword_clearErrorWithoutThePassword() {
        String uri =
                mariadb.jdbcUrl() + "?user=" + MariaDbServer.USER + "&password=wrong-pw-123" + "&dlockTable=" + table;
        assertThatThrownBy(() -> LockClient.connect(uri))
                .isInstanceOf(LockBackendException.class)
                .hasMessageContaining("Access denied")
                .hasMessageNotContaining("wrong-pw-123");
    }

    @Test
    void connect_missingTable_errorPrintsTheDdl() {
        assertThatThrownBy(() -> LockClient.connect(jdbcUrl() + "&dlockTable=" + table))
                .isInstanceOf(LockBackendException.class)
                .hasMessageContaining("CREATE TABLE IF NOT EXISTS " + table + " (")
                .hasMessageContaining("ENGINE = InnoDB");
    }

    @Test
    void databaseClock_isEpochMillisWithoutTimeZoneOffset() throws Exception {
        checkDatabaseClockIsEpochMillis(JdbcDialect.MARIADB);
    }

    @Test
    void fencedWrite_olderTokenRefused_sameTokenAccepted() throws Exception {
        checkFencedWrites();
    }

    @Test
    void databaseClock_decides_slowTickerCannotKeepTheLock() throws Exception {
        long start = System.nanoTime();
        LockOptions slow = LockOptions.builder()
                .leaseTime(Duration.ofSeconds(1))
                .renewal(false)
                .ticker(() -> start + (System.nanoTime() - start) / 10)
                .build();
        LockClient slowClient = track(LockClient.connect(uri(""), slow));
        LockClient honest = client();
        Lease slowLease = slowClient.lock("clock").acquire();
        assertThat(honest.lock("clock").tryAcquire(Duration.ZERO)).isEmpty();
        long t0 = System.nanoTime();
        Lease next = honest.lock("clock").tryAcquire(scaled(10)).orElseThrow();
        assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0))
                .isLessThan(scaled(3).toMillis());
        assertThat(next.fencingToken()).isGreaterThan(slowLease.fencingToken());
        slowLease.close();
        assertThat(entries("clock")).hasSize(1);
        next.close();
    }

    @Test
    void tryAcquire_zeroWaitWhileHeld_writesNoWaiterRow() throws Exception {
        checkZeroWaitWritesNothing();
    }

    @Test
    void waiterTimingOutWhileTheRowIsHandedOver_neverLeftOwningIt() throws Exception {
        checkWithdrawalRacingHandOver();
    }
}
