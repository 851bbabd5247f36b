package io.dlock.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.dlock.Lease;
import io.dlock.LockClient;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.postgresql.PGConnection;
import org.postgresql.PGNotification;

/**
 * The LISTEN connection's socket ({@link PgListenSocketFactory}): the driver's probe for more
 * pending bytes after a notification is answered at once, and no notification is lost or cut.
 */
class PostgresListenSocketIT extends PostgresTestSupport {

    @Test
    void quickPeekSocket_everyNotificationArrivesWholeAndInOrder_theProbeAnsweredAtOnce() throws Exception {
        Properties props = new Properties();
        props.setProperty("socketFactory", PgListenSocketFactory.class.getName());
        long peeksBefore = PgListenSocketFactory.QUICK_PEEKS.get();
        List<String> sent = new ArrayList<>();
        List<String> got = new ArrayList<>();
        try (Connection listen = DriverManager.getConnection(jdbcUrl(), props);
                Connection send = connect()) {
            try (Statement s = listen.createStatement()) {
                s.execute("LISTEN peek_test");
            }
            // Bursts of several notifications in one commit (they arrive back to back, some in one
            // read), a long payload among them, and single ones.
            send.setAutoCommit(false);
            try (PreparedStatement ps = send.prepareStatement("SELECT pg_notify('peek_test', ?)")) {
                for (int burst = 0; burst < 20; burst++) {
                    for (int i = 0; i < (burst % 2 == 0 ? 10 : 1); i++) {
                        String payload = burst + "/" + i + (i == 3 ? "x".repeat(6000) : "");
                        ps.setString(1, payload);
                        ps.executeQuery().close();
                        sent.add(payload);
                    }
                    send.commit();
                }
            }
            long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
            while (got.size() < sent.size() && System.nanoTime() - end < 0) {
                PGNotification[] notes = listen.unwrap(PGConnection.class).getNotifications(500);
                if (notes != null) {
                    for (PGNotification n : notes) {
                        got.add(n.getParameter());
                    }
                }
            }
            try (Statement s = listen.createStatement()) {
                s.execute("UNLISTEN *"); // the connection still works as a connection afterwards
            }
        }
        assertThat(got).containsExactlyElementsOf(sent);
        assertThat(PgListenSocketFactory.QUICK_PEEKS.get()).isGreaterThan(peeksBefore);
    }

    @Test
    void clientsListenOnTheQuickPeekSocket() throws Exception {
        LockClient a = client();
        LockClient b = client();
        Lease held = a.lock("peek").acquire();
        var pending = b.lock("peek").acquireAsync(Duration.ofMinutes(1));
        await().atMost(scaled(10)).until(() -> entries("peek").size() == 2);
        long peeksBefore = PgListenSocketFactory.QUICK_PEEKS.get();
        held.close();
        Lease next = pending.get(10, TimeUnit.SECONDS); // handed over through b's LISTEN connection
        assertThat(next.fencingToken()).isGreaterThan(held.fencingToken());
        assertThat(PgListenSocketFactory.QUICK_PEEKS.get()).isGreaterThan(peeksBefore);
        next.close();
    }
}
