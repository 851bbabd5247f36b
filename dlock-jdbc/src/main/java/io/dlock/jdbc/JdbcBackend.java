package io.dlock.jdbc;

import io.dlock.Capability;
import io.dlock.LockBackendException;
import io.dlock.LockOptions;
import io.dlock.spi.ConnectionState;
import io.dlock.spi.LockBackend;
import io.dlock.spi.LockInspector;
import io.dlock.spi.LockProtocol;
import io.dlock.spi.QueueEntry;
import java.net.InetAddress;
import java.sql.Connection;
import java.sql.Driver;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.SQLTransientConnectionException;
import java.sql.Statement;
import java.time.Duration;
import java.util.EnumSet;
import java.util.List;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;
import javax.sql.DataSource;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * dlock's connections to one database: at most {@code maxConnections} connections for statements,
 * each used by one of as many worker threads, plus on PostgreSQL one connection that LISTENs for
 * this client's wake-ups.
 *
 * <p>Concurrency: statements run on the worker threads (JDBC blocks; the SPI must not), one at a
 * time per connection, in autocommit; no transaction is ever left open. A caller that only waits
 * for its statement (a blocking acquire, a lease's close) runs it itself when a connection slot is
 * free, bounded by the connect timeout; workers and such callers together hold at most {@code
 * maxConnections} connections. Timers (the waiters'
 * poller, back-off) run on one timer thread that never touches a connection.
 *
 * <p>Failure: a statement that fails completes its future with the {@link SQLException}; a
 * connection that failed is closed and replaced on next use, so a database restart heals by
 * itself. Messages never contain the password.
 */
final class JdbcBackend implements LockBackend {
    private static final Logger log = LoggerFactory.getLogger(JdbcBackend.class);
    static final String NAME = "jdbc";

    /** One unit of work on a connection. */
    @FunctionalInterface
    interface Work<T> {
        @Nullable
        T run(Connection c) throws SQLException;
    }

    final JdbcUri uri;
    final LockOptions options;
    final JdbcStatements sql;
    /** This client's id (32 lower-case hex digits): owner of its waiter rows, name of its channel. */
    final String clientId = UUID.randomUUID().toString().replace("-", "");
    /** Who this client is in the holder columns: pid@host (the statements append the grant time). */
    final String holder;

    private final Connections connections;
    private final ThreadPoolExecutor workers;
    /**
     * One per connection that may run a statement at once ({@code maxConnections}): taken by a
     * worker for each statement and by a caller that runs its own (so the two together never use
     * more connections than configured).
     */
    private final java.util.concurrent.Semaphore slots;
    /** A caller's own statement's network timeout (ms); 0: callers never run statements. */
    private final int inlineTimeoutMs;

    final ScheduledThreadPoolExecutor timer;
    private final JdbcLockProtocol protocol;
    /** MariaDB/MySQL in lease mode: the waiters' doorbell; else null. */
    final @Nullable MariaDbDoorbell doorbell;
    /** Session mode's protocol, or null in lease mode. */
    private final @Nullable PgSessionProtocol sessions;

    private final Set<Capability> capabilities;
    private final List<Consumer<ConnectionState>> listeners = new CopyOnWriteArrayList<>();
    private final AtomicBoolean closed = new AtomicBoolean();
    private volatile @Nullable PgListener listener;
    /** The engine's listener for grants removed by force (PostgreSQL); set once, before any lock is used. */
    volatile Consumer<QueueEntry> forcedListener = e -> {};

    private final JdbcInspector inspector;
    private final @Nullable PgSessionInspector sessionInspector;

    private JdbcBackend(JdbcUri uri, Connections connections) {
        this.uri = uri;
        this.options = uri.options();
        this.sql = new JdbcStatements(uri.dialect(), uri.table());
        this.connections = connections;
        String host;
        try {
            host = InetAddress.getLocalHost().getHostName();
        } catch (java.io.IOException e) {
            host = "unknown";
        }
        String h = ProcessHandle.current().pid() + "@" + host;
        // Room for the grant time the statements append (JdbcStatements.stamp) in the 255 characters.
        this.holder = h.length() > 240 ? h.substring(0, 240) : h;
        AtomicInteger n = new AtomicInteger();
        this.workers = new ThreadPoolExecutor(
                uri.maxConnections(), uri.maxConnections(), 30, TimeUnit.SECONDS, new LinkedBlockingQueue<>(), r -> {
                    Thread t = new Thread(r, "dlock-jdbc-" + n.incrementAndGet());
                    t.setDaemon(true);
                    return t;
                });
        this.workers.allowCoreThreadTimeOut(true);
        this.slots = new java.util.concurrent.Semaphore(uri.maxConnections());
        // H2 in process has no network to time out on, and its driver ignores the setting: a statement
        // there cannot hang on a silent peer, but one blocked behind a lock could, so it stays on the workers.
        this.inlineTimeoutMs = uri.dialect() == JdbcDialect.H2
                ? 0
                : (int) Math.min(
                        Integer.MAX_VALUE, Math.max(1, options.connectTimeout().toMillis()));
        this.timer = new ScheduledThreadPoolExecutor(1, r -> {
            Thread t = new Thread(r, "dlock-jdbc-timer");
            t.setDaemon(true);
            return t;
        });
        this.timer.setRemoveOnCancelPolicy(true);
        EnumSet<Capability> caps = EnumSet.of(
                Capability.EXCLUSIVE,
                Capability.FENCING_TOKENS,
                Capability.READ_WRITE,
                Capability.SEMAPHORE,
                Capability.MULTI_LOCK,
                Capability.LOST_DETECTION,
                Capability.CRASH_RELEASE,
                Capability.RENEWAL,
                Capability.NO_HERD);
        if (options.fair()) {
            caps.add(Capability.FAIR);
        }
        if (uri.sessionMode()) {
            // Advisory and user locks: exclusive only; the server's lock queue is FIFO whatever 'fair' says.
            caps.removeAll(EnumSet.of(Capability.READ_WRITE, Capability.SEMAPHORE));
            caps.add(Capability.FAIR);
        }
        this.capabilities = Set.copyOf(caps);
        this.doorbell = uri.dialect() == JdbcDialect.MARIADB && !uri.sessionMode()
                ? new MariaDbDoorbell(this, sql, uri.maxConnections())
                : null;
        this.protocol = new JdbcLockProtocol(this);
        this.sessions = uri.sessionMode() ? new PgSessionProtocol(this) : null;
        this.inspector = new JdbcInspector(this);
        this.sessionInspector =
                uri.sessionMode() && uri.dialect() == JdbcDialect.POSTGRESQL ? new PgSessionInspector(this) : null;
    }

    /**
     * Opens a backend on a JDBC URL: dlock's own connections through the driver.
     *
     * <p>Blocking: until the tables are checked (or created). On failure: {@link
     * LockBackendException} (unreachable, credentials refused, table missing), nothing left open.
     */
    static JdbcBackend open(JdbcUri uri) {
        Driver driver;
        try {
            driver = DriverManager.getDriver(uri.jdbcUrl());
        } catch (SQLException e) {
            throw new LockBackendException(
                    null,
                    NAME,
                    "no JDBC driver on the classpath accepts '" + JdbcUri.redact(uri.jdbcUrl(), uri.password())
                            + "': add " + driverArtifact(uri.dialect()),
                    null);
        }
        return start(new JdbcBackend(uri, new OwnConnections(driver, uri)));
    }

    /** Opens a backend on the application's {@link DataSource}. */
    static JdbcBackend open(DataSource dataSource, JdbcUri uri) {
        return start(new JdbcBackend(uri, new BorrowedConnections(dataSource)));
    }

    private static String driverArtifact(JdbcDialect d) {
        return switch (d) {
            case POSTGRESQL -> "org.postgresql:postgresql";
            case MARIADB -> "org.mariadb.jdbc:mariadb-java-client (or com.mysql:mysql-connector-j)";
            case H2 -> "com.h2database:h2";
        };
    }

    private static JdbcBackend start(JdbcBackend b) {
        try {
            b.checkTables();
            if (b.uri.dialect() == JdbcDialect.POSTGRESQL && !b.uri.sessionMode()) {
                PgListener l = new PgListener(b, b.protocol);
                b.listener = l;
                l.start();
            }
            return b;
        } catch (RuntimeException e) {
            b.close();
            throw e;
        }
    }

    /** Probes both tables; creates them with {@code createTable}, else fails printing the DDL. */
    private void checkTables() {
        Connection c = null;
        boolean broken = false;
        try {
            c = connections.borrow();
            JdbcDialect actual = JdbcDialect.ofProduct(c.getMetaData().getDatabaseProductName());
            if (actual != null && actual != uri.dialect()) {
                throw new LockBackendException(
                        null,
                        NAME,
                        "the DataSource is a " + actual.id + " database, but dlock was configured for "
                                + uri.dialect().id,
                        null);
            }
            try (Statement s = c.createStatement()) {
                s.executeQuery(sql.probe).close();
                return;
            } catch (SQLException e) {
                if (missingColumn(e)) {
                    if (uri.createTable() && addColumns(c)) {
                        return;
                    }
                    throw new LockBackendException(
                            null,
                            NAME,
                            "lock table " + uri.table() + " or " + sql.waiters
                                    + " lacks columns this version of dlock needs (" + e.getMessage()
                                    + "). A table of an earlier version needs only `"
                                    + String.join("` and `", sql.addColumns())
                                    + "`, each if its column is missing (earlier versions ignore the columns, so"
                                    + " clients of both can run during a rolling upgrade; createTable=true runs"
                                    + " them), else create the"
                                    + " tables anew with the DDL below:\n"
                                    + uri.dialect().ddl(uri.table()),
                            null);
                }
                if (!missingTable(e)) {
                    throw e;
                }
                if (!uri.createTable()) {
                    throw new LockBackendException(
                            null,
                            NAME,
                            "lock table " + uri.table() + " or "
                                    + sql.waiters + " does not exist (" + e.getMessage()
                                    + "). Create it with the DDL below,"
                                    + " or set createTable=true to let dlock create it:\n"
                                    + uri.dialect().ddl(uri.table()),
                            null);
                }
            }
            // Two clients creating at once: PostgreSQL's IF NOT EXISTS is not race-free (the loser
            // fails on the row type the winner is still creating), and the winner may be between
            // its statements. Every statement is idempotent, so the loser runs them again.
            for (int attempt = 1; ; attempt++) {
                try {
                    for (String ddl : uri.dialect().ddlStatements(uri.table())) {
                        try (Statement s = c.createStatement()) {
                            s.execute(ddl);
                        }
                    }
                    break;
                } catch (SQLException e) {
                    if (attempt >= 5) {
                        throw e;
                    }
                    try {
                        Thread.sleep(50L * attempt);
                    } catch (InterruptedException ie) {
                        Thread.currentThread().interrupt();
                        throw e;
                    }
                }
            }
            log.info("[client={}] created lock tables {} and {}", NAME, uri.table(), sql.waiters);
        } catch (SQLException e) {
            broken = true;
            throw new LockBackendException(null, NAME, "cannot use " + describe() + ": " + message(e), null);
        } finally {
            if (c != null) {
                connections.giveBack(c, broken);
            }
        }
    }

    /**
     * Upgrades an earlier version's tables (the columns of {@link JdbcStatements#addColumns}); true if the
     * probe passes afterwards. A column that is there already (an older upgrade, or a concurrent
     * client's ALTER) makes its ALTER fail: the probe decides.
     */
    private boolean addColumns(Connection c) throws SQLException {
        for (String alter : sql.addColumns()) {
            try (Statement s = c.createStatement()) {
                s.execute(alter);
                log.info("[client={}] upgraded the lock tables: {}", NAME, alter);
            } catch (SQLException e) {
                log.debug("[client={}] {}: {}", NAME, alter, message(e));
            }
        }
        try (Statement s = c.createStatement()) {
            s.executeQuery(sql.probe).close();
            return true;
        } catch (SQLException e) {
            if (missingColumn(e)) {
                return false;
            }
            throw e;
        }
    }

    static boolean missingColumn(SQLException e) {
        // PostgreSQL 42703, MariaDB/MySQL 42S22 (error 1054), H2 42S22 (error 42122)
        String state = String.valueOf(e.getSQLState());
        return state.equals("42703") || state.equals("42S22") || e.getErrorCode() == 1054 || e.getErrorCode() == 42122;
    }

    static boolean missingTable(SQLException e) {
        String state = String.valueOf(e.getSQLState());
        // PostgreSQL 42P01, MariaDB/MySQL 42S02 (error 1146), H2 42S02 and errors 42102..42104
        int code = e.getErrorCode();
        return state.equals("42P01") || state.startsWith("42S0") || code == 1146 || code >= 42102 && code <= 42104;
    }

    /** The database as messages name it, without credentials. */
    String describe() {
        String url = uri.jdbcUrl();
        int q = url.indexOf('?');
        return String.valueOf(JdbcUri.redact(q < 0 ? url : url.substring(0, q), uri.password()));
    }

    /** An exception's message with the password removed. */
    String message(Throwable e) {
        return e.getClass().getSimpleName() + ": " + JdbcUri.redact(String.valueOf(e.getMessage()), uri.password());
    }

    // ---- running statements

    /** Runs {@code work} on a worker's connection; never blocks the caller. */
    <T> CompletableFuture<T> submit(Work<T> work) {
        CompletableFuture<T> f = new CompletableFuture<>();
        try {
            workers.execute(() -> {
                slots.acquireUninterruptibly();
                try {
                    run(work, f, null);
                } finally {
                    slots.release();
                }
            });
        } catch (RejectedExecutionException e) {
            f.completeExceptionally(closedException());
        }
        return f;
    }

    /**
     * Runs {@code work} on the calling thread on {@code c}, a dedicated connection the caller uses
     * alone (a doorbell's); blocks for the statement. A failure completes the future; the caller
     * finds out about a broken connection by its own next statement.
     */
    static <T> CompletableFuture<T> runOn(Connection c, Work<T> work) {
        CompletableFuture<T> f = new CompletableFuture<>();
        try {
            f.complete(work.run(c));
        } catch (SQLException | RuntimeException e) {
            f.completeExceptionally(e);
        }
        return f;
    }

    /**
     * Runs {@code work} on the calling thread when {@code callerWaits} (the caller only waits for
     * the result: see {@code LockProtocol#enqueue(LockRequest, boolean)}) and a slot and an open
     * idle connection of dlock's own are free at once; else as {@link #submit(Work)}. The caller is then spared two thread hand-offs,
     * a worker's wake-up and its own, about a third of an uncontended cycle's time over the
     * database's. On the caller, a round trip is bounded by the connect timeout (the connection's
     * network timeout, for that statement only), so a silent database cannot hold the caller
     * longer than the engine bounds its wait; the connections' own socket timeout is longer.
     */
    <T> CompletableFuture<T> submit(Work<T> work, boolean callerWaits) {
        if (!callerWaits || inlineTimeoutMs <= 0 || closed.get() || !slots.tryAcquire()) {
            return submit(work);
        }
        Connection idle = connections.borrowIdle();
        if (idle == null) {
            slots.release();
            return submit(work);
        }
        CompletableFuture<T> f = new CompletableFuture<>();
        try {
            run(work, f, idle);
        } finally {
            slots.release();
        }
        return f;
    }

    /** Runs {@code work} on {@code onCaller}, a connection the caller took, or else on one borrowed now. */
    private <T> void run(Work<T> work, CompletableFuture<T> f, @Nullable Connection onCaller) {
        Connection c = onCaller;
        boolean broken = false;
        int restore = -1;
        try {
            if (c == null) {
                c = connections.borrow();
            } else {
                int before = c.getNetworkTimeout();
                if (before == 0 || before > inlineTimeoutMs) {
                    c.setNetworkTimeout(Runnable::run, inlineTimeoutMs);
                    restore = before;
                }
            }
            f.complete(work.run(c));
        } catch (SQLException e) {
            broken = c == null || brokenConnection(e);
            f.completeExceptionally(e);
        } catch (IllegalArgumentException e) {
            f.completeExceptionally(e); // refused input: the connection is fine
        } catch (RuntimeException e) {
            broken = true;
            f.completeExceptionally(e);
        } finally {
            if (c != null) {
                if (restore >= 0 && !broken) {
                    try {
                        c.setNetworkTimeout(Runnable::run, restore);
                    } catch (SQLException e) {
                        broken = true;
                    }
                }
                connections.giveBack(c, broken);
            }
        }
    }

    private LockBackendException closedException() {
        return new LockBackendException(null, NAME, "client is closed", null);
    }

    /**
     * H2's codes (its SQL states) for a connection that is gone: object closed, connection broken,
     * database closed, database shutting down. H2 does not use class 08 for them, and a connection
     * that raised one raises it on every later statement.
     */
    private static final java.util.Set<String> H2_CONNECTION_GONE =
            java.util.Set.of("90007", "90067", "90098", "90121");

    /** Whether the connection should be dropped: a connection-class error or one from which it may not recover. */
    static boolean brokenConnection(SQLException e) {
        String state = e.getSQLState();
        return state == null
                || state.startsWith("08")
                || state.startsWith("57")
                || state.startsWith("53")
                || H2_CONNECTION_GONE.contains(state)
                || e instanceof java.sql.SQLRecoverableException
                || e instanceof SQLTransientConnectionException;
    }

    /** Whether a failure may heal by itself (a dropped connection, a restart), not a pool's timeout. */
    static boolean transientFailure(Throwable t) {
        for (Throwable c = t; c != null; c = c.getCause()) {
            if (c instanceof SQLTransientConnectionException) {
                // A pool's timeout (HikariCP): the application holds every connection. Retrying would
                // only multiply the pool's timeout; the caller hears of it at once.
                return false;
            }
            if (c instanceof SQLException e) {
                String state = String.valueOf(e.getSQLState());
                if (state.startsWith("08")
                        || state.startsWith("57")
                        || state.startsWith("40")
                        || H2_CONNECTION_GONE.contains(state)
                        || e instanceof java.sql.SQLRecoverableException
                        || e instanceof java.sql.SQLTransientException) {
                    return true;
                }
            }
            if (c instanceof java.io.IOException) {
                return true;
            }
        }
        return false;
    }

    @Nullable
    ScheduledFuture<?> schedule(Runnable task, long delayMs) {
        try {
            return timer.schedule(task, Math.max(0, delayMs), TimeUnit.MILLISECONDS);
        } catch (RejectedExecutionException e) {
            return null;
        }
    }

    /** Whether connections come from the application's DataSource (their settings are not dlock's). */
    /**
     * Runs {@code body} as one transaction on {@code c} at {@code isolation}, then puts the
     * connection back in autocommit at the isolation it had. Blocks on the server; throws what the
     * body or the commit threw, after a rollback.
     */
    <T> T inTransaction(Connection c, int isolation, SqlBody<T> body) throws SQLException {
        // Our own connections are all READ COMMITTED (PostgreSQL's default, set for MariaDB's).
        int had = borrowsConnections() ? c.getTransactionIsolation() : Connection.TRANSACTION_READ_COMMITTED;
        if (had != isolation) {
            c.setTransactionIsolation(isolation);
        }
        c.setAutoCommit(false);
        boolean committed = false;
        try {
            T result = body.run();
            c.commit();
            committed = true;
            return result;
        } finally {
            try {
                if (!committed) {
                    c.rollback();
                }
                c.setAutoCommit(true);
                if (had != isolation) {
                    c.setTransactionIsolation(had);
                }
            } catch (SQLException e) {
                // Never hand on a connection that may still be inside a transaction.
                throw new SQLException("could not end a transaction: " + e.getMessage(), "08003", e);
            }
        }
    }

    @FunctionalInterface
    interface SqlBody<T> {
        T run() throws SQLException;
    }

    boolean borrowsConnections() {
        return connections instanceof BorrowedConnections;
    }

    boolean isClosed() {
        return closed.get();
    }

    /** Whether wake-ups arrive by NOTIFY right now (PostgreSQL with a live LISTEN connection). */
    boolean notified() {
        PgListener l = listener;
        return l != null && l.healthy();
    }

    Connection dedicatedConnection() throws SQLException {
        return connections.dedicated();
    }

    /** The LISTEN connection: dedicated; on dlock's own connections, with {@link PgListenSocketFactory}. */
    Connection listenConnection() throws SQLException {
        return connections.listening();
    }

    void closeDedicated(Connection c) {
        connections.closeDedicated(c);
    }

    // ---- LockBackend

    @Override
    public String name() {
        return NAME;
    }

    @Override
    public Set<Capability> capabilities() {
        return capabilities;
    }

    @Override
    public LockProtocol protocol() {
        PgSessionProtocol s = sessions;
        return s != null ? s : protocol;
    }

    /**
     * The operator view: of the lock tables ({@link JdbcInspector}), or in session mode of the
     * advisory locks in {@code pg_locks} ({@link PgSessionInspector}).
     */
    @Override
    public Optional<LockInspector> inspector() {
        PgSessionInspector s = sessionInspector;
        if (s == null && uri.sessionMode()) {
            // MariaDB's user locks list neither holders nor waiters without the metadata_lock_info plugin.
            return Optional.empty();
        }
        return Optional.of(s != null ? s : inspector);
    }

    @Override
    public void onForcedRelease(Consumer<QueueEntry> listener) {
        forcedListener = listener;
    }

    @Override
    public void onConnectionState(Consumer<ConnectionState> listener) {
        listeners.add(listener);
    }

    @Override
    public Duration maxSuspension() {
        // Never reported: each grant's validity is its own lease, renewed by the engine.
        return options.leaseTime().dividedBy(3);
    }

    @Override
    public void close() {
        if (!closed.compareAndSet(false, true)) {
            return;
        }
        PgListener l = listener;
        if (l != null) {
            l.close();
        }
        PgSessionProtocol s = sessions;
        if (s != null) {
            s.close();
        }
        MariaDbDoorbell bells = doorbell;
        if (bells != null) {
            bells.close();
        }
        try {
            // The client's waiter rows (the engine released its leases before closing us).
            protocol.close().get(options.connectTimeout().toMillis(), TimeUnit.MILLISECONDS);
        } catch (Exception e) {
            log.debug("[client={}] removing waiter rows on close: {}", NAME, e.toString());
        }
        workers.shutdown();
        try {
            workers.awaitTermination(options.connectTimeout().toMillis(), TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        workers.shutdownNow();
        timer.shutdownNow();
        connections.close();
    }

    @Override
    public String toString() {
        return "JdbcBackend[" + describe() + ", table " + uri.table() + ", client " + clientId + "]";
    }

    // ---- connections

    /** Where connections come from: dlock's own (a JDBC URL) or the application's DataSource. */
    private interface Connections {
        Connection borrow() throws SQLException;

        /**
         * An open connection at once, without opening one (whose handshake a silent server could
         * stretch to the socket timeout) or waiting for a pool; null if there is none.
         */
        @Nullable
        Connection borrowIdle();

        void giveBack(Connection c, boolean broken);

        Connection dedicated() throws SQLException;

        /** A dedicated connection for LISTEN (closed with {@link #closeDedicated}). */
        Connection listening() throws SQLException;

        void closeDedicated(Connection c);

        void close();
    }

    /**
     * dlock's own connections, opened through the driver: at most {@code maxConnections} idle ones
     * are kept (one per worker thread), and the listener's one.
     */
    private static final class OwnConnections implements Connections {
        private final Driver driver;
        private final JdbcUri uri;
        private final BlockingQueue<Connection> idle;
        private final Set<Connection> open = java.util.concurrent.ConcurrentHashMap.newKeySet();

        OwnConnections(Driver driver, JdbcUri uri) {
            this.driver = driver;
            this.uri = uri;
            this.idle = new ArrayBlockingQueue<>(uri.maxConnections() + 1);
        }

        private Connection connect() throws SQLException {
            return connect(false);
        }

        private Connection connect(boolean listen) throws SQLException {
            Properties props = new Properties();
            long seconds = Math.max(1, uri.options().connectTimeout().toSeconds());
            // How long a reply may take before the connection counts as gone (a silent network).
            long readTimeoutSeconds = Math.max(seconds * 3, 30);
            switch (uri.dialect()) {
                case POSTGRESQL -> {
                    props.setProperty("connectTimeout", Long.toString(seconds));
                    props.setProperty("socketTimeout", Long.toString(readTimeoutSeconds));
                    props.setProperty("tcpKeepAlive", "true");
                    props.setProperty("ApplicationName", "dlock");
                    if (listen) {
                        props.setProperty("socketFactory", PgListenSocketFactory.class.getName());
                    }
                }
                case MARIADB -> {
                    props.setProperty("connectTimeout", Long.toString(seconds * 1000));
                    props.setProperty("socketTimeout", Long.toString(readTimeoutSeconds * 1000));
                }
                case H2 -> {
                    // A remote H2 reads replies with no timeout unless asked, and ignores
                    // setNetworkTimeout and abort: a request lost in a silent network would hold its
                    // worker, and that connection, for good.
                    String url = uri.jdbcUrl().toUpperCase(java.util.Locale.ROOT);
                    if ((url.startsWith("JDBC:H2:TCP:") || url.startsWith("JDBC:H2:SSL:"))
                            && !url.contains("NETWORK_TIMEOUT=")) {
                        props.setProperty("NETWORK_TIMEOUT", Long.toString(readTimeoutSeconds * 1000));
                    }
                }
            }
            Connection c = driver.connect(uri.jdbcUrl(), props);
            if (c == null) {
                throw new SQLException("the driver refused the URL", "08001");
            }
            c.setAutoCommit(true);
            if (uri.dialect() == JdbcDialect.MARIADB) {
                c.setTransactionIsolation(Connection.TRANSACTION_READ_COMMITTED);
            }
            open.add(c);
            return c;
        }

        @Override
        public Connection borrow() throws SQLException {
            Connection c = idle.poll();
            return c != null ? c : connect();
        }

        @Override
        public @Nullable Connection borrowIdle() {
            return idle.poll();
        }

        @Override
        public void giveBack(Connection c, boolean broken) {
            if (broken || !idle.offer(c)) {
                closeQuietly(c);
            }
        }

        @Override
        public Connection dedicated() throws SQLException {
            return connect();
        }

        @Override
        public Connection listening() throws SQLException {
            if (uri.dialect() != JdbcDialect.POSTGRESQL) {
                return connect();
            }
            try {
                return connect(true);
            } catch (SQLException e) {
                if (!String.valueOf(e.getMessage()).contains("SocketFactory")) {
                    throw e;
                }
                // The driver could not load it (a class loader that does not see dlock-jdbc): the
                // plain socket works, each NOTIFY only arrives about 1 ms later.
                log.debug("[client={}] LISTEN without the quick-peek socket: {}", NAME, e.getMessage());
                return connect();
            }
        }

        @Override
        public void closeDedicated(Connection c) {
            closeQuietly(c);
        }

        private void closeQuietly(Connection c) {
            open.remove(c);
            try {
                c.close();
            } catch (SQLException e) {
                // already gone
            }
        }

        @Override
        public void close() {
            java.util.Set<Connection> notInUse = java.util.Collections.newSetFromMap(new java.util.IdentityHashMap<>());
            notInUse.addAll(idle);
            idle.clear();
            for (Connection c : open) {
                if (notInUse.contains(c)) {
                    closeQuietly(c);
                } else {
                    abortQuietly(c);
                }
            }
        }

        /**
         * A connection in use may be stuck in a read from a silent server (a blackholed flow: no
         * driver here times out a read by default), holding the driver's own lock, which close()
         * would wait for forever: it is aborted on a thread of its own instead.
         */
        private void abortQuietly(Connection c) {
            open.remove(c);
            try {
                c.abort(task -> {
                    Thread t = new Thread(task, "dlock-jdbc-abort");
                    t.setDaemon(true);
                    t.start();
                });
            } catch (SQLException | RuntimeException | AbstractMethodError e) {
                Thread t = new Thread(() -> closeQuietly(c), "dlock-jdbc-abort");
                t.setDaemon(true);
                t.start();
            }
        }
    }

    /** The application's DataSource: a connection per statement, given back at once. */
    private static final class BorrowedConnections implements Connections {
        private final DataSource dataSource;

        BorrowedConnections(DataSource dataSource) {
            this.dataSource = dataSource;
        }

        @Override
        public Connection borrow() throws SQLException {
            Connection c = dataSource.getConnection();
            if (!c.getAutoCommit()) {
                c.setAutoCommit(true);
            }
            return c;
        }

        /** The application's pool may wait (its own timeout) or open a connection: never on a caller. */
        @Override
        public @Nullable Connection borrowIdle() {
            return null;
        }

        @Override
        public void giveBack(Connection c, boolean broken) {
            try {
                c.close();
            } catch (SQLException e) {
                // the pool's business
            }
        }

        @Override
        public Connection dedicated() throws SQLException {
            return borrow();
        }

        @Override
        public Connection listening() throws SQLException {
            // The application's pool makes its own sockets: each NOTIFY arrives about 1 ms later there
            // (PgListenSocketFactory says why).
            return borrow();
        }

        @Override
        public void closeDedicated(Connection c) {
            giveBack(c, true);
        }

        @Override
        public void close() {}
    }
}
