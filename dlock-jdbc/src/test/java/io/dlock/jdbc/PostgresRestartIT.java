package io.dlock.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.dlock.Lease;
import io.dlock.LockClient;
import io.dlock.LockLostException;
import io.dlock.testkit.PostgresServer;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** PostgreSQL stopped and started under a held lock, on a server of its own. */
class PostgresRestartIT {
    static PostgresServer server;

    @BeforeAll
    static void start() {
        server = PostgresServer.start();
    }

    @AfterAll
    static void stop() {
        server.close();
    }

    private String uri(String extra) {
        return server.jdbcUrl() + "?user=" + PostgresServer.USER + "&password=" + PostgresServer.PASSWORD
                + "&dlockTable=restart&createTable=true" + extra;
    }

    @Test
    void databaseDownLongerThanTheLease_leaseInvalidOnLostOnce_laterAcquiresWork() throws Exception {
        try (LockClient holder = LockClient.connect(uri("&leaseTime=2s"));
                LockClient other = LockClient.connect(uri(""))) {
            Lease lease = holder.lock("r").acquire();
            List<LockLostException> lost = new CopyOnWriteArrayList<>();
            lease.onLost(lost::add);
            server.stop();
            try {
                await().atMost(JdbcTestSupport.scaled(10)).until(() -> !lease.isValid());
                // onLost runs on the listener thread just after the lease turns invalid.
                await().atMost(JdbcTestSupport.scaled(5)).until(() -> !lost.isEmpty());
                assertThat(lost).hasSize(1);
            } finally {
                server.startAgain(); // the class's other tests need the server, whatever happened here
            }
            try (Lease next =
                    other.lock("r").tryAcquire(JdbcTestSupport.scaled(20)).orElseThrow()) {
                assertThat(next.fencingToken()).isGreaterThan(lease.fencingToken());
            }
            lease.close();
            try (Lease again =
                    holder.lock("r").tryAcquire(JdbcTestSupport.scaled(10)).orElseThrow()) {
                assertThat(again.isValid()).isTrue();
            }
            assertThat(lost).hasSize(1);
        }
        try (Connection c = DriverManager.getConnection(uri("").replace("&dlockTable=restart&createTable=true", ""));
                Statement s = c.createStatement();
                ResultSet rs = s.executeQuery("SELECT count(*) FROM restart WHERE owner IS NOT NULL")) {
            rs.next();
            assertThat(rs.getLong(1)).isZero();
        }
    }

    /**
     * Session mode: a restart ends the holder's pinned session and the server forgets its advisory
     * lock; a client that asks right after the restart must not be granted while the old lease can
     * still report {@code isValid()} (sampled on the thread that completes the grant).
     */
    @Test
    void sessionMode_restart_nextGrantOnlyOnceTheOldLeaseIsInvalid() throws Exception {
        try (LockClient holder = LockClient.connect(uri("&mode=session&leaseTime=3s"));
                LockClient other = LockClient.connect(uri("&mode=session&leaseTime=3s"))) {
            Lease lease = holder.lock("s").acquire();
            List<LockLostException> lost = new CopyOnWriteArrayList<>();
            lease.onLost(lost::add);
            long restartedAt = System.nanoTime();
            server.restart();
            var pending = other.lock("s").acquireAsync(Duration.ofMinutes(1));
            var oldValidAtGrant = pending.thenApply(l -> lease.isValid());
            Lease next = pending.get(JdbcTestSupport.scaled(20).toMillis(), java.util.concurrent.TimeUnit.MILLISECONDS);
            long grantedAfterMs = java.util.concurrent.TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - restartedAt);
            assertThat(oldValidAtGrant.get())
                    .as(
                            "the old lease's isValid() when the next grant completed (%d ms after the restart began)",
                            grantedAfterMs)
                    .isFalse();
            assertThat(next.fencingToken()).isGreaterThan(lease.fencingToken());
            await().atMost(JdbcTestSupport.scaled(5)).until(() -> lost.size() == 1);
            next.close();
            lease.close();
        }
    }

    @Test
    void quickRestart_leaseSurvives() throws Exception {
        try (LockClient holder = LockClient.connect(uri("&leaseTime=6s"))) {
            Lease lease = holder.lock("quick").acquire();
            List<LockLostException> lost = new CopyOnWriteArrayList<>();
            lease.onLost(lost::add);
            server.restart();
            // The row and its expiry are on disk: renewals reach the restarted server in time.
            // Valid throughout more than two renewal intervals on the restarted server.
            await().during(Duration.ofSeconds(4))
                    .atMost(Duration.ofSeconds(6))
                    .until(() -> lease.isValid() && lost.isEmpty());
            lease.close();
        }
    }
}
