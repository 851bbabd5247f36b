package io.dlock.jdbc;

import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.concurrent.TimeUnit;
import org.jspecify.annotations.Nullable;
import org.postgresql.PGConnection;
import org.postgresql.PGNotification;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The one PostgreSQL connection per client that LISTENs on the client's channel ({@code
 * dlock_<clientId>}); a release NOTIFYs the client of the first live waiter with that waiter's
 * acquisition id, and only that waiter re-checks.
 *
 * <p>Concurrency: one daemon thread owns the connection and waits on it ({@code
 * getNotifications(timeout)}); wake-ups are handed to the protocol, which queues the grant attempt
 * on a worker. Failure: a broken connection is replaced with bounded back-off (50 ms doubling to
 * 2 s); after each reconnect every waiter is checked once, since NOTIFYs sent meanwhile were lost.
 * While it is down, {@link #healthy()} is false and the waiters' poller polls at its short
 * interval.
 *
 * <p>A silent connection: a NAT or firewall that drops an idle flow sends no FIN or RST, and a
 * LISTEN connection only reads, so nothing would ever fail on it; every NOTIFY would be lost and
 * each hand-over to this client would wait for the slow poll (a third of the lease time) for as
 * long as the client lives. So the listener sends {@code SELECT 1} on its connection every half
 * {@code connectTimeout}, under a network timeout of half {@code connectTimeout}: a connection
 * that stopped answering is found within {@code connectTimeout} (+ up to {@value #WAIT_MS} ms, the
 * wait for notifications), then the poller polls fast and the listener reconnects on a new flow.
 */
final class PgListener {
    private static final Logger log = LoggerFactory.getLogger(PgListener.class);
    private static final int WAIT_MS = 500;

    private final JdbcBackend backend;
    private final JdbcLockProtocol protocol;
    private final Thread thread;
    /** Interval of the probe, and its network timeout: half the connect timeout, at least 100 ms. */
    private final int probeMs;

    private volatile boolean healthy;
    private volatile boolean closed;
    private volatile @Nullable Connection connection;

    PgListener(JdbcBackend backend, JdbcLockProtocol protocol) {
        this.backend = backend;
        this.protocol = protocol;
        this.probeMs = (int) Math.max(
                100,
                Math.min(Integer.MAX_VALUE, backend.options.connectTimeout().toMillis() / 2));
        this.thread = new Thread(this::run, "dlock-jdbc-listen");
        this.thread.setDaemon(true);
    }

    /** Opens the connection and LISTENs before returning, so the first waiter is already covered. */
    void start() {
        try {
            listen();
        } catch (SQLException e) {
            throw new io.dlock.LockBackendException(
                    null, JdbcBackend.NAME, "cannot LISTEN on " + backend.describe() + ": " + backend.message(e), null);
        }
        thread.start();
    }

    /** The LISTEN session's application_name: a client id is 32 hex digits, safe in a literal. */
    static String applicationName(String clientId) {
        return "dlock_" + clientId;
    }

    boolean healthy() {
        return healthy;
    }

    private void listen() throws SQLException {
        Connection c = backend.listenConnection();
        try (Statement s = c.createStatement()) {
            // The inspector tells a live client from a dead one by this session (JdbcInspector).
            s.execute("SET application_name = '" + applicationName(backend.clientId) + "'");
            s.execute("LISTEN dlock_" + backend.clientId);
            // The probe's bound; getNotifications sets its own wait and puts this one back.
            c.setNetworkTimeout(Runnable::run, probeMs);
        } catch (SQLException e) {
            backend.closeDedicated(c);
            throw e;
        }
        connection = c;
        healthy = true;
    }

    private void run() {
        long backoffMs = 50;
        long probedAt = System.nanoTime();
        long probeNanos = TimeUnit.MILLISECONDS.toNanos(probeMs);
        while (!closed) {
            Connection c = connection;
            try {
                if (c == null) {
                    listen();
                    probedAt = System.nanoTime();
                    backoffMs = 50;
                    log.debug("[client={}] LISTEN connection back; checking every waiter", JdbcBackend.NAME);
                    protocol.kickAll();
                    continue;
                }
                long now = System.nanoTime();
                if (now - probedAt >= probeNanos) {
                    // Notifications that arrive meanwhile are kept by the driver for the next read.
                    try (Statement s = c.createStatement()) {
                        s.execute("SELECT 1");
                    }
                    probedAt = now;
                }
                PGNotification[] notes = c.unwrap(PGConnection.class).getNotifications(WAIT_MS);
                if (notes != null) {
                    for (PGNotification n : notes) {
                        protocol.onWake(n.getParameter());
                    }
                }
            } catch (SQLException | RuntimeException e) {
                if (closed) {
                    return;
                }
                healthy = false;
                if (c != null) {
                    log.debug("[client={}] LISTEN connection failed: {}", JdbcBackend.NAME, backend.message(e));
                    backend.closeDedicated(c);
                    connection = null;
                }
                try {
                    Thread.sleep(backoffMs); // bounded reconnect back-off on a dedicated thread
                } catch (InterruptedException ie) {
                    return;
                }
                backoffMs = Math.min(2_000, backoffMs * 2);
            }
        }
    }

    void close() {
        closed = true;
        healthy = false;
        thread.interrupt();
        try {
            thread.join(2_000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        Connection c = connection;
        if (c != null) {
            if (backend.borrowsConnections()) {
                // A pool keeps the session: it must not claim to be this client after it closed.
                try (Statement s = c.createStatement()) {
                    s.execute("UNLISTEN *");
                    s.execute("RESET application_name");
                } catch (SQLException e) {
                    log.debug("[client={}] resetting the LISTEN session: {}", JdbcBackend.NAME, backend.message(e));
                }
            }
            backend.closeDedicated(c);
        }
    }
}
