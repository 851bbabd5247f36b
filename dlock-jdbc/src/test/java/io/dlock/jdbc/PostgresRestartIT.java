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
            await().atMost(JdbcTestSupport.scaled(10)).until(() -> !lease.isValid());
            assertThat(lost).hasSize(1);
            server.startAgain();
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
