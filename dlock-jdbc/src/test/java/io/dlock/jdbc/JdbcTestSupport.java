package io.dlock.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import io.dlock.LockClient;
import io.dlock.LockOptions;
import io.dlock.spi.LockInspector;
import io.dlock.testkit.LockFixtureSupport;
import io.dlock.testkit.Timing;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;

/**
 * A database per test run for each dialect ({@link PostgresTestSupport}, {@link MariaDbTestSupport},
 * {@link H2TestSupport}), a fresh lock table per test (created by the client with {@code
 * createTable=true}), fresh clients per test. After each test every client is closed, and the table
 * must hold no owner and no waiter row: whatever dlock takes, it gives back.
 */
abstract class JdbcTestSupport extends LockFixtureSupport {
    private static final AtomicInteger TABLES = new AtomicInteger();

    String table;

    @BeforeEach
    void newTable() {
        table = "t" + TABLES.incrementAndGet() + "_" + ProcessHandle.current().pid();
    }

    @AfterEach
    void closeClientsAndCheckClean() throws Exception {
        closeTracked();
        if (alive()) {
            assertThat(liveRows()).as("owners and waiters left in %s", table).isEmpty();
        }
    }

    /** Whether the database server runs (a test may have stopped it). */
    abstract boolean alive();

    @Override
    public String backendName() {
        return "jdbc";
    }

    @Override
    public String shortLease() {
        return "leaseTime=2s";
    }

    @Override
    public Duration crashReleaseBound() {
        // The dead holder's lease (2 s) runs out; the waiter's poller checks right after its expiry.
        return Duration.ofSeconds(5);
    }

    /** The database's JDBC URL with credentials, without dlock's parameters. */
    public abstract String jdbcUrl();

    @Override
    public String uri(String query) {
        String sep = jdbcUrl().contains("?") ? "&" : "?";
        return jdbcUrl() + sep + "dlockTable=" + table + "&createTable=true" + (query.isEmpty() ? "" : "&" + query);
    }

    Connection connect() throws SQLException {
        return DriverManager.getConnection(jdbcUrl());
    }

    /** A client on the test's table whose connections pass through {@code gate} (closed after the test). */
    LockClient clientThrough(StatementGate gate) {
        return track(JdbcLocks.builder(gate.dataSource(this::connect))
                .table(table)
                .createTable(true)
                .connect());
    }

    // ---- InspectorContract's and JdbcInspectCases' hooks (used by the *InspectIT classes)

    /** An inspector on a backend of its own (no engine), as {@code dlock inspect} opens one. */
    public LockInspector inspector() {
        return track(JdbcBackend.open(JdbcUri.parse(uri(""), LockOptions.defaults())))
                .inspector()
                .orElseThrow();
    }

    public String longHold() {
        return "leaseTime=60s";
    }

    public String lockTable() {
        return table;
    }

    /** The test's table without {@code createTable}. */
    public String uriWithoutCreate() {
        String sep = jdbcUrl().contains("?") ? "&" : "?";
        return jdbcUrl() + sep + "dlockTable=" + table;
    }

    public Connection sqlConnection() throws SQLException {
        return connect();
    }

    /** Rows that hold or wait: "owner" rows of the lock table, then waiter rows. */
    List<String> liveRows() throws SQLException {
        List<String> out = new ArrayList<>();
        try (Connection c = connect();
                Statement s = c.createStatement()) {
            try (ResultSet rs = s.executeQuery("SELECT name, owner FROM " + table + " WHERE owner IS NOT NULL")) {
                while (rs.next()) {
                    out.add("held " + rs.getString(1) + " by " + rs.getString(2));
                }
            } catch (SQLException e) {
                if (!JdbcBackend.missingTable(e)) {
                    throw e;
                }
                return out; // the test never connected a client
            }
            try (ResultSet rs = s.executeQuery("SELECT name, acquisition FROM " + table + "_waiters ORDER BY seq")) {
                while (rs.next()) {
                    out.add("waiting " + rs.getString(1) + " " + rs.getString(2));
                }
            }
        }
        return out;
    }

    /** The holder, then the waiters in queue order, of lock {@code lock}. */
    @Override
    public List<String> entries(String lock) {
        List<String> out = new ArrayList<>();
        try (Connection c = connect()) {
            try (PreparedStatement ps =
                    c.prepareStatement("SELECT owner FROM " + table + " WHERE name = ? AND owner IS NOT NULL")) {
                ps.setString(1, lock);
                try (ResultSet rs = ps.executeQuery()) {
                    while (rs.next()) {
                        out.add(rs.getString(1));
                    }
                }
            }
            try (PreparedStatement ps =
                    // token > 0: the row of a waiter a release handed the lock to, now its owner
                    c.prepareStatement("SELECT acquisition FROM " + table
                            + "_waiters WHERE name = ? AND token = 0 ORDER BY seq")) {
                ps.setString(1, lock);
                try (ResultSet rs = ps.executeQuery()) {
                    while (rs.next()) {
                        // On MariaDB a granted waiter's row is deleted just after its grant returns:
                        // until then it is the owner's, not a second entry.
                        String acquisition = rs.getString(1);
                        if (!out.contains(acquisition)) {
                            out.add(acquisition);
                        }
                    }
                }
            }
        } catch (SQLException e) {
            if (JdbcBackend.missingTable(e)) {
                return out;
            }
            throw new IllegalStateException(e);
        }
        return out;
    }

    // ---- PrimitivesContract's hooks (used by the *PrimitivesIT classes)

    /** The entries of read-write lock {@code lock}, holders and waiters, in arrival order. */
    public List<String> readWriteEntries(String lock) {
        return queueRows("rw/" + lock);
    }

    /** The entries of semaphore {@code lock}, holders and waiters, in arrival order. */
    public List<String> semaphoreEntries(String lock) {
        return queueRows("s/" + lock);
    }

    /** Every row of both tables, token counters included. */
    public List<String> serverState() {
        List<String> out = new ArrayList<>();
        try (Connection c = connect();
                Statement s = c.createStatement()) {
            try (ResultSet rs = s.executeQuery("SELECT name, token, owner FROM " + table)) {
                while (rs.next()) {
                    out.add("lock " + rs.getString(1) + " token " + rs.getLong(2) + " owner " + rs.getString(3));
                }
            }
            try (ResultSet rs = s.executeQuery("SELECT name, acquisition FROM " + table + "_waiters")) {
                while (rs.next()) {
                    out.add("entry " + rs.getString(1) + " " + rs.getString(2));
                }
            }
        } catch (SQLException e) {
            if (JdbcBackend.missingTable(e)) {
                return out;
            }
            throw new IllegalStateException(e);
        }
        return out;
    }

    /** Frees exclusive lock {@code lock}'s row behind its holder's back, as an expired lease would. */
    public void dropHolder(String lock) throws SQLException {
        try (Connection c = connect();
                PreparedStatement ps = c.prepareStatement("UPDATE " + table
                        + " SET owner = NULL, client = NULL, expires_ms = NULL, holder = NULL WHERE name = ?")) {
            ps.setString(1, lock);
            assertThat(ps.executeUpdate()).isEqualTo(1);
        }
    }

    private List<String> queueRows(String name) {
        List<String> out = new ArrayList<>();
        try (Connection c = connect();
                PreparedStatement ps = c.prepareStatement(
                        "SELECT acquisition, kind, token FROM " + table + "_waiters WHERE name = ? ORDER BY seq")) {
            ps.setString(1, name);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    out.add(rs.getString(2) + " " + rs.getString(1) + (rs.getLong(3) > 0 ? " held" : " waiting"));
                }
            }
        } catch (SQLException e) {
            if (JdbcBackend.missingTable(e)) {
                return out;
            }
            throw new IllegalStateException(e);
        }
        return out;
    }

    /**
     * A zero-wait try on a held lock or a full semaphore is one grant attempt and writes no row: the
     * next real waiter's arrival number directly follows the previous one's.
     */
    void checkZeroWaitWritesNothing() throws Exception {
        io.dlock.LockClient holder = client();
        io.dlock.LockClient other = client("localQueueing=false");
        io.dlock.Lease held = holder.lock("zero").acquire();
        io.dlock.Lease full = holder.semaphore("zero", 1).acquire(1);
        var first = other.lock("zero").acquireAsync(Duration.ofMinutes(1));
        org.awaitility.Awaitility.await()
                .atMost(scaled(10))
                .until(() -> entries("zero").size() == 2);
        long before = queryLong("SELECT MAX(seq) FROM " + table + "_waiters");
        io.dlock.LockClient third = client("localQueueing=false");
        for (int i = 0; i < 5; i++) {
            assertThat(third.lock("zero").tryAcquire(Duration.ZERO)).isEmpty();
            assertThat(third.semaphore("zero", 1).tryAcquire(1, Duration.ZERO)).isEmpty();
        }
        var second = third.lock("zero").acquireAsync(Duration.ofMinutes(1));
        org.awaitility.Awaitility.await()
                .atMost(scaled(10))
                .until(() -> entries("zero").size() == 3);
        assertThat(queryLong("SELECT MAX(seq) FROM " + table + "_waiters")).isEqualTo(before + 1);
        full.close();
        held.close();
        first.get(10, java.util.concurrent.TimeUnit.SECONDS).close();
        second.get(10, java.util.concurrent.TimeUnit.SECONDS).close();
    }

    /** Runs one query and returns the first column of the first row as a long. */
    long queryLong(String query) throws SQLException {
        try (Connection c = connect();
                Statement s = c.createStatement();
                ResultSet rs = s.executeQuery(query)) {
            assertThat(rs.next()).as("a row from %s", query).isTrue();
            return rs.getLong(1);
        }
    }

    /**
     * The dialect's clock expression gives epoch milliseconds (no time-zone offset): within a few
     * seconds of this JVM's wall clock, on the same machine.
     */
    void checkDatabaseClockIsEpochMillis(JdbcDialect dialect) throws Exception {
        long db = queryLong("SELECT " + dialect.now);
        assertThat(Math.abs(db - System.currentTimeMillis()))
                .as("database clock %d", db)
                .isLessThan(5_000);
    }

    /**
     * The fenced-write helper on this database: a higher token is recorded, the same token may be
     * recorded again, an older one is refused and its transaction's write rolled back.
     */
    void checkFencedWrites() throws Exception {
        FencedWrites fence = FencedWrites.of(table + "_fence");
        try (Connection c = connect();
                Statement s = c.createStatement()) {
            fence.createTable(c);
            s.execute("CREATE TABLE " + table + "_stock (id INT PRIMARY KEY, qty INT NOT NULL)");
            s.execute("INSERT INTO " + table + "_stock VALUES (42, 5)");
        }
        assertThat(sell(fence, 2048)).isTrue(); // first write: the guard row is created
        assertThat(sell(fence, 2048)).isTrue(); // the same holder again
        assertThat(sell(fence, 5120)).isTrue(); // a later holder
        assertThat(sell(fence, 2048)).isFalse(); // the former holder, late: refused
        assertThat(queryLong("SELECT qty FROM " + table + "_stock WHERE id = 42"))
                .isEqualTo(2);
        assertThat(queryLong("SELECT token FROM " + table + "_fence WHERE resource = 'stock-42'"))
                .isEqualTo(5120);
        try (Connection c = connect()) {
            org.assertj.core.api.Assertions.assertThatThrownBy(() -> fence.check(c, "stock-42", 9999))
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("autocommit");
        }
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> FencedWrites.of("f; DROP TABLE x"))
                .isInstanceOf(IllegalArgumentException.class);
    }

    /** The oversell example: sells one item if the fence admits {@code token}; false if refused. */
    boolean sell(FencedWrites fence, long token) throws Exception {
        try (Connection c = connect()) {
            c.setAutoCommit(false);
            try {
                fence.check(c, "stock-42", token);
                try (PreparedStatement ps =
                        c.prepareStatement("UPDATE " + table + "_stock SET qty = qty - 1" + " WHERE id = 42")) {
                    ps.executeUpdate();
                }
                c.commit();
                return true;
            } catch (StaleTokenException e) {
                c.rollback();
                assertThat(e.token()).isEqualTo(token);
                assertThat(e.resource()).isEqualTo("stock-42");
                return false;
            }
        }
    }

    /**
     * A waiter whose wait ends (timed out) around the release that hands it the row: 40 such races,
     * after each nothing owned and nothing waiting well before the 30 s lease could free it, tokens
     * rising.
     */
    void checkWithdrawalRacingHandOver() throws Exception {
        io.dlock.LockClient a = client();
        io.dlock.LockClient b = client();
        long last = 0;
        for (int i = 0; i < 40; i++) {
            io.dlock.Lease held = a.lock("race").acquire();
            assertThat(held.fencingToken()).isGreaterThan(last);
            last = held.fencingToken();
            long waitMs = 150;
            java.util.concurrent.CompletableFuture<java.util.Optional<io.dlock.Lease>> attempt =
                    java.util.concurrent.CompletableFuture.supplyAsync(() -> {
                        try {
                            return b.lock("race").tryAcquire(Duration.ofMillis(waitMs));
                        } catch (InterruptedException e) {
                            Thread.currentThread().interrupt();
                            throw new IllegalStateException(e);
                        }
                    });
            org.awaitility.Awaitility.await()
                    .atMost(scaled(10))
                    .until(() -> entries("race").size() == 2 || attempt.isDone());
            // Release around the waiter's deadline, so that its withdrawal races the hand-over.
            java.util.concurrent.locks.LockSupport.parkNanos(java.util.concurrent.TimeUnit.MILLISECONDS.toNanos(waitMs
                    - 40
                    + java.util.concurrent.ThreadLocalRandom.current().nextLong(60)));
            held.close();
            java.util.Optional<io.dlock.Lease> got = attempt.get(10, java.util.concurrent.TimeUnit.SECONDS);
            if (got.isPresent()) {
                assertThat(got.get().fencingToken()).isGreaterThan(last);
                last = got.get().fencingToken();
                got.get().close();
            }
            // Well before the 30 s lease could free it: nothing owned, nothing waiting.
            org.awaitility.Awaitility.await().atMost(scaled(3)).untilAsserted(() -> assertThat(liveRows())
                    .isEmpty());
        }
    }

    /**
     * Clients with different lease times on one lock: a holder X with a 60 s lease releases to a
     * waiter W with a 3 s lease (on PostgreSQL the release itself grants W), W's process is then
     * killed, and a third client Y (3 s) must get the lock within W's own lease plus the poll, not
     * within X's. Returns the milliseconds from the kill to Y's grant.
     */
    long checkHandOverToAShortLeaseWaiterThatDies() throws Exception {
        io.dlock.LockClient x = client("leaseTime=60s");
        io.dlock.Lease held = x.lock("mixed").acquire();
        try (io.dlock.testkit.ChildJvm w = io.dlock.testkit.ChildJvm.start(
                io.dlock.testkit.LockWorker.class, List.of("hold", uri("leaseTime=3s"), "mixed"))) {
            w.awaitLine("READY", scaled(30));
            org.awaitility.Awaitility.await()
                    .atMost(scaled(30))
                    .until(() -> entries("mixed").size() == 2);
            held.close();
            long token = Long.parseLong(w.awaitLine("HOLDING", scaled(10)).split(" ")[1]);
            long killedAt = System.nanoTime();
            w.kill();
            io.dlock.LockClient y = client("leaseTime=3s");
            java.util.Optional<io.dlock.Lease> next = y.lock("mixed").tryAcquire(scaled(20));
            long passedMs = java.util.concurrent.TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - killedAt);
            assertThat(next)
                    .as("the lock 20 s after the killed holder's 3 s lease began (X's lease was 60 s)")
                    .isPresent();
            assertThat(next.get().fencingToken()).isGreaterThan(token);
            // W's 3 s lease (counted from before the kill) + the waiter's poll + scheduling slack.
            assertThat(passedMs)
                    .isLessThan(Timing.scale(Duration.ofMillis(3_000 + 2_000)).toMillis());
            next.get().close();
            // The killed client's waiter row, expired, deleted here as its next waiter would: handed
            // over (PostgreSQL), or granted to it and not yet deleted when it died (MariaDB deletes a
            // granted waiter's row after the grant returns). It must be expired: Y was granted.
            JdbcDialect dialect = java.util.Objects.requireNonNull(JdbcDialect.ofUrl(jdbcUrl()), jdbcUrl());
            try (Connection c = connect();
                    Statement s = c.createStatement()) {
                s.executeUpdate("DELETE FROM " + table + "_waiters WHERE name = 'mixed' AND (token > 0 OR expires_ms < "
                        + dialect.now + ")");
            }
            return passedMs;
        }
    }

    static Duration scaled(long seconds) {
        return Timing.scale(Duration.ofSeconds(seconds));
    }
}
