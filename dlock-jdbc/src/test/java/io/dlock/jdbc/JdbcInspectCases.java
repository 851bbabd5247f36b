package io.dlock.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.dlock.Lease;
import io.dlock.LockBackendException;
import io.dlock.LockClient;
import io.dlock.spi.EntrySnapshot;
import io.dlock.spi.LockInspector;
import io.dlock.spi.LockKind;
import io.dlock.spi.LockSnapshot;
import io.dlock.testkit.InspectorContract;
import io.dlock.testkit.Timing;
import java.net.InetAddress;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;

/**
 * The SQL inspector beyond the testkit's contract: prefixes are literal (LIKE's {@code %} and
 * {@code _}, the escape character), names with quotes, host, pid and grant time recorded by this
 * version, rows written by the previous version, and the upgrade of a previous version's table.
 */
interface JdbcInspectCases extends InspectorContract {

    String lockTable();

    String uriWithoutCreate();

    Connection sqlConnection() throws SQLException;

    private static Duration scaled(long seconds) {
        return Timing.scale(Duration.ofSeconds(seconds));
    }

    private static List<String> names(List<LockSnapshot> locks) {
        return locks.stream().map(LockSnapshot::name).toList();
    }

    @Test
    default void inspect_prefixWithLikeWildcardsEscapeAndQuotes_isLiteral() throws Exception {
        LockInspector inspector = inspector();
        LockClient c = newClient();
        List<Lease> leases = new java.util.ArrayList<>();
        for (String name : List.of("a_c", "axc", "a.d")) {
            leases.add(c.lock(name).acquire());
        }
        // Lock names cannot hold a quote or '%' (LockNames), but the table is the operator's: a row
        // another tool wrote must be shown and removable, and a prefix is bound, never spliced.
        String odd = "o'brien; DROP TABLE x -- 100% !";
        try (Connection conn = sqlConnection();
                java.sql.PreparedStatement ps = conn.prepareStatement("INSERT INTO " + lockTable()
                        + " (name, owner, client, token, expires_ms, holder) VALUES (?, 'acq-1', 'c1', 7, ?, '1@h')")) {
            ps.setString(1, odd);
            ps.setLong(2, System.currentTimeMillis() + 3_600_000L);
            ps.executeUpdate();
        }

        assertThat(names(inspector.inspect(""))).containsExactly("a.d", "a_c", "axc", odd);
        assertThat(names(inspector.inspect("a_"))).containsExactly("a_c");
        assertThat(names(inspector.inspect("a"))).containsExactly("a.d", "a_c", "axc");
        assertThat(names(inspector.inspect("%"))).isEmpty();
        assertThat(names(inspector.inspect("a%"))).isEmpty();
        assertThat(names(inspector.inspect("_"))).isEmpty();
        assertThat(names(inspector.inspect("o'brien; DROP TABLE x -- 100%"))).containsExactly(odd);
        assertThat(names(inspector.inspect("o'brien; DROP TABLE x -- 100% !"))).containsExactly(odd);
        assertThat(names(inspector.inspect("o'brien; DROP TABLE x -- 100!"))).isEmpty();

        EntrySnapshot holder = inspector.inspect(odd).get(0).holders().get(0);
        assertThat(holder.key()).isEqualTo(odd + "#acq-1#7");
        assertThat(holder.pid()).isEqualTo(1);
        assertThat(holder.host()).isEqualTo("h");
        assertThat(inspector.forceRelease(odd, List.of(odd + "#acq-1#6")))
                .as("a key whose token is no longer the row's removes nothing")
                .isEmpty();
        assertThat(inspector.forceRelease(odd, List.of(holder.key()))).containsExactly(holder.key());
        assertThat(names(inspector.inspect(""))).containsExactly("a.d", "a_c", "axc");
        for (Lease l : leases) {
            l.close();
        }
        assertThat(inspector.inspect("")).isEmpty();
    }

    @Test
    default void inspect_recordsPidHostAndTimesOnTheDatabaseClock() throws Exception {
        LockInspector inspector = inspector();
        long pid = ProcessHandle.current().pid();
        String host = InetAddress.getLocalHost().getHostName();
        Instant before = Instant.now().minusSeconds(5); // the database's clock, not ours: a margin
        Lease held = client("leaseTime=20s").lock("who").acquire();
        CompletableFuture<Lease> waiting = newClient().lock("who").acquireAsync(scaled(30));
        Lease read = newClient().readWriteLock("who").readLock().acquire();
        Lease permits = newClient().semaphore("who", 4).acquire(3);
        List<LockSnapshot> all = await().atMost(scaled(10))
                .until(
                        () -> inspector.inspect("who"),
                        l -> l.size() == 3 && l.get(0).waiters().size() == 1);

        assertThat(all)
                .extracting(LockSnapshot::kind)
                .containsExactly(LockKind.EXCLUSIVE, LockKind.READ_WRITE, LockKind.SEMAPHORE);
        assertThat(all.get(2).maxPermits()).isEqualTo(4);
        List<EntrySnapshot> entries = List.of(
                all.get(0).holders().get(0),
                all.get(0).waiters().get(0),
                all.get(1).holders().get(0),
                all.get(2).holders().get(0));
        for (EntrySnapshot e : entries) {
            assertThat(e.pid()).as("pid of %s", e.key()).isEqualTo(pid);
            assertThat(e.host()).as("host of %s", e.key()).isEqualTo(host);
            assertThat(e.since())
                    .as("since of %s", e.key())
                    .isBetween(before, Instant.now().plusSeconds(5));
            assertThat(e.clientId()).as("client of %s", e.key()).matches("[0-9a-f]{32}");
            assertThat(e.leaseLeft()).as("lease left of %s", e.key()).isPositive();
        }
        EntrySnapshot holder = entries.get(0);
        assertThat(holder.leaseToken()).isEqualTo(held.fencingToken());
        assertThat(holder.leaseLeft()).isLessThanOrEqualTo(Duration.ofSeconds(20));
        assertThat(entries.get(2).leaseToken()).isEqualTo(read.fencingToken());
        assertThat(entries.get(3).permits()).isEqualTo(3);

        held.close();
        waiting.get().close();
        read.close();
        permits.close();
    }

    @Test
    default void inspect_rowsOfThePreviousVersion_areShownWithWhatTheyRecord() throws Exception {
        LockInspector inspector = inspector();
        Lease held = newClient().lock("old").acquire();
        CompletableFuture<Lease> waiting = newClient().lock("old").acquireAsync(scaled(30));
        await().atMost(scaled(10))
                .until(
                        () -> inspector.inspect("old"),
                        l -> l.size() == 1 && l.get(0).waiters().size() == 1);
        try (Connection c = sqlConnection();
                Statement s = c.createStatement()) {
            // What the previous version wrote: pid@host without the time, no holder in the queue.
            s.executeUpdate("UPDATE " + lockTable() + " SET holder = '4242@old-host' WHERE name = 'old'");
            s.executeUpdate("UPDATE " + lockTable() + "_waiters SET holder = NULL WHERE name = 'old'");
        }

        LockSnapshot s = inspector.inspect("old").get(0);
        EntrySnapshot h = s.holders().get(0);
        assertThat(h.pid()).isEqualTo(4242);
        assertThat(h.host()).isEqualTo("old-host");
        assertThat(h.since()).isNull();
        assertThat(h.connected()).isNull();
        assertThat(h.leaseToken()).isEqualTo(held.fencingToken());
        EntrySnapshot w = s.waiters().get(0);
        assertThat(w.pid()).isEqualTo(-1);
        assertThat(w.host()).isNull();
        assertThat(w.since()).isNull();
        assertThat(w.clientId()).isNotNull();

        held.close();
        waiting.get().close();
    }

    @Test
    default void open_previousVersionsTable_isRefusedNamingTheAlterOrUpgradedByCreateTable() throws Exception {
        newClient().lock("upgrade").acquire().close(); // creates the tables
        boolean mariaDb;
        try (Connection c = sqlConnection();
                Statement s = c.createStatement()) {
            mariaDb = JdbcDialect.ofProduct(c.getMetaData().getDatabaseProductName()) == JdbcDialect.MARIADB;
            s.execute("ALTER TABLE " + lockTable() + "_waiters DROP COLUMN holder");
            s.execute("ALTER TABLE " + lockTable() + "_waiters DROP COLUMN lease_ms");
            if (mariaDb) {
                s.execute("ALTER TABLE " + lockTable() + " DROP COLUMN queued");
            }
        }

        var refused = assertThatThrownBy(
                        () -> LockClient.connect(uriWithoutCreate()).close())
                .isInstanceOf(LockBackendException.class)
                .hasMessageContaining("ALTER TABLE " + lockTable() + "_waiters ADD COLUMN holder VARCHAR(255)")
                .hasMessageContaining("ALTER TABLE " + lockTable() + "_waiters ADD COLUMN lease_ms BIGINT");
        if (mariaDb) {
            refused.hasMessageContaining(
                    "ALTER TABLE " + lockTable() + " ADD COLUMN queued TINYINT NOT NULL DEFAULT 0");
        }

        LockClient upgraded = newClient(); // createTable=true adds the columns
        Lease l = upgraded.lock("upgrade").acquire();
        CompletableFuture<Lease> waiting = newClient().lock("upgrade").acquireAsync(scaled(30));
        LockSnapshot s = await().atMost(scaled(10))
                .until(
                        () -> inspector().inspect("upgrade"),
                        x -> x.size() == 1 && x.get(0).waiters().size() == 1)
                .get(0);
        assertThat(s.waiters().get(0).pid()).isEqualTo(ProcessHandle.current().pid());
        l.close();
        waiting.get().close();

        // A table with holder but not lease_ms (the version before this one) is upgraded as well.
        try (Connection c = sqlConnection();
                Statement st = c.createStatement()) {
            st.execute("ALTER TABLE " + lockTable() + "_waiters DROP COLUMN lease_ms");
        }
        assertThatThrownBy(() -> LockClient.connect(uriWithoutCreate()).close())
                .isInstanceOf(LockBackendException.class)
                .hasMessageContaining("ADD COLUMN lease_ms BIGINT");
        newClient().lock("upgrade").acquire().close();
        LockClient.connect(uriWithoutCreate()).close(); // the probe passes now
    }
}
