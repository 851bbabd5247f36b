package io.dlock.jdbc;

import io.dlock.LockBackendException;
import io.dlock.Ticker;
import io.dlock.spi.EntryLostException;
import io.dlock.spi.Grant;
import io.dlock.spi.LockMode;
import io.dlock.spi.LockProtocol;
import io.dlock.spi.LockRequest;
import io.dlock.spi.Position;
import io.dlock.spi.QueueEntry;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * PostgreSQL session mode ({@code ?mode=session}): each exclusive lock is a {@code
 * pg_advisory_lock} held by a connection of its own, for as long as that connection's session
 * lives. The server drops the lock the moment the session ends (a client killed, a connection
 * closed), and grants it to the next session waiting in its lock queue (FIFO, one waiter woken).
 * The fencing token comes from the lease table: the holder increments the counter row {@code
 * pg/<name>} right after the advisory lock is granted, on the same connection, so only one session
 * at a time increments it and tokens rise with every grant.
 *
 * <p>Cost: one connection pinned per held lock and per waiter (a waiter blocks in {@code
 * pg_advisory_lock} on its connection). It needs a real session: a transaction-mode pooler
 * (PgBouncer {@code pool_mode=transaction}) would hand the session to others between statements.
 * Up to {@code maxConnections} idle connections are kept for the next lock.
 *
 * <p>Loss: the engine's renewal (every third of the lease time) runs {@code SELECT 1} on the
 * holder's connection; if it fails, the session (and with it the lock) is gone: {@link
 * EntryLostException}, the lease turns invalid and {@code onLost} fires.
 *
 * <p>Concurrency: each connection is used by one thread at a time: the waiting thread (blocked in
 * {@code pg_advisory_lock}), then the renewals and the release, which the engine never overlaps. A
 * waiter withdrawn while blocked has its connection aborted from the releasing thread, which ends
 * the wait and the session.
 */
final class PgSessionProtocol implements LockProtocol {
    private static final Logger log = LoggerFactory.getLogger(PgSessionProtocol.class);

    private final JdbcBackend backend;
    private final Ticker ticker;
    private final long leaseNanos;
    private final long marginNanos;
    private final String tokenSql;
    private final Map<String, Session> sessions = new ConcurrentHashMap<>();
    private final BlockingQueue<Connection> idle;
    private final ExecutorService threads;

    /** One acquisition's connection, and whether its advisory lock is granted. */
    private static final class Session {
        final QueueEntry entry;
        final long key;
        final Connection connection;
        volatile boolean granted;
        volatile boolean withdrawn;

        Session(QueueEntry entry, long key, Connection connection) {
            this.entry = entry;
            this.key = key;
            this.connection = connection;
        }
    }

    PgSessionProtocol(JdbcBackend backend) {
        this.backend = backend;
        this.ticker = backend.options.ticker();
        long leaseMs = Math.max(1, backend.options.leaseTime().toMillis());
        this.leaseNanos = TimeUnit.MILLISECONDS.toNanos(leaseMs);
        this.marginNanos = leaseNanos / 100 + TimeUnit.MILLISECONDS.toNanos(2);
        String table = backend.uri.table();
        this.tokenSql = "INSERT INTO " + table + " AS l (name, token) VALUES (?, 1) ON CONFLICT (name) DO UPDATE"
                + " SET token = l.token + 1 RETURNING l.token";
        this.idle = new ArrayBlockingQueue<>(backend.uri.maxConnections());
        AtomicInteger n = new AtomicInteger();
        // A thread per waiting or working session: a waiter blocks in pg_advisory_lock.
        this.threads = Executors.newCachedThreadPool(r -> {
            Thread t = new Thread(r, "dlock-jdbc-session-" + n.incrementAndGet());
            t.setDaemon(true);
            return t;
        });
    }

    /** The advisory lock key of a lock: 64 bits of SHA-256 over the table and the name. */
    static long key(String table, String name) {
        try {
            byte[] digest =
                    MessageDigest.getInstance("SHA-256").digest((table + "/" + name).getBytes(StandardCharsets.UTF_8));
            return ByteBuffer.wrap(digest).getLong();
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is required by every Java platform", e);
        }
    }

    private <T> CompletableFuture<T> run(String lockName, String what, Work<T> work) {
        CompletableFuture<T> f = new CompletableFuture<>();
        try {
            threads.execute(() -> {
                try {
                    f.complete(work.run());
                } catch (SQLException e) {
                    f.completeExceptionally(failure(lockName, what, e));
                } catch (RuntimeException e) {
                    f.completeExceptionally(e);
                }
            });
        } catch (RejectedExecutionException e) {
            f.completeExceptionally(new LockBackendException(lockName, JdbcBackend.NAME, "client is closed", null));
        }
        return f;
    }

    @FunctionalInterface
    private interface Work<T> {
        T run() throws SQLException;
    }

    private Connection connection() throws SQLException {
        Connection c = idle.poll();
        return c != null ? c : backend.dedicatedConnection();
    }

    @Override
    public CompletionStage<Position> enqueue(LockRequest request) {
        if (request.mode() != LockMode.EXCLUSIVE) {
            return CompletableFuture.failedFuture(new UnsupportedOperationException(
                    "dlock-jdbc's session mode has exclusive locks only, not " + request.mode()));
        }
        String name = request.lockName();
        QueueEntry entry =
                new QueueEntry(name, request.acquisitionId(), "pg/" + name + "#" + request.acquisitionId(), 0, 0);
        long key = key(backend.uri.table(), name);
        long t0 = ticker.read();
        return run(name, "acquire", () -> {
            Connection c = connection();
            Session s = new Session(entry, key, c);
            try {
                boolean got;
                try (PreparedStatement ps = c.prepareStatement("SELECT pg_try_advisory_lock(?)")) {
                    ps.setLong(1, key);
                    try (ResultSet rs = ps.executeQuery()) {
                        rs.next();
                        got = rs.getBoolean(1);
                    }
                }
                sessions.put(entry.acquisitionId(), s);
                if (!got) {
                    return Position.waiting(entry, "pg_advisory_lock");
                }
                return Position.granted(grant(s, t0));
            } catch (SQLException | RuntimeException e) {
                sessions.remove(entry.acquisitionId(), s);
                discard(c);
                throw e;
            }
        });
    }

    /** Takes the token on the holding session; the validity counts from before the lock was asked for. */
    private Grant grant(Session s, long t0) throws SQLException {
        long token;
        try (PreparedStatement ps = s.connection.prepareStatement(tokenSql)) {
            ps.setString(1, "pg/" + s.entry.lockName());
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                token = rs.getLong(1);
            }
        }
        s.granted = true;
        return new Grant(s.entry, token, t0 + leaseNanos - marginNanos);
    }

    @Override
    public CompletionStage<Position> awaitTurn(Position waiting) {
        Session s = sessions.get(waiting.entry().acquisitionId());
        if (s == null) {
            return CompletableFuture.failedFuture(new EntryLostException(waiting.entry(), "it is not waiting here"));
        }
        return run(s.entry.lockName(), "waiting", () -> {
            try (PreparedStatement ps = s.connection.prepareStatement("SELECT pg_advisory_lock(?)")) {
                ps.setLong(1, s.key);
                ps.executeQuery().close();
            } catch (SQLException e) {
                if (s.withdrawn) {
                    throw new EntryLostException(s.entry, "it was withdrawn");
                }
                throw e;
            }
            // The validity counts from the grant's own reading: the wait itself guarantees nothing.
            return Position.granted(grant(s, ticker.read()));
        });
    }

    @Override
    public CompletionStage<Void> release(QueueEntry entry) {
        Session s = sessions.remove(entry.acquisitionId());
        if (s == null) {
            return CompletableFuture.completedFuture(null);
        }
        s.withdrawn = true;
        if (!s.granted) {
            // Its thread may be blocked in pg_advisory_lock: end the session under it.
            try {
                s.connection.abort(Runnable::run);
            } catch (SQLException e) {
                log.debug("[lock={} state=CANCELLED] abort: {}", entry.lockName(), backend.message(e));
            }
            backend.closeDedicated(s.connection);
            return CompletableFuture.completedFuture(null);
        }
        return run(entry.lockName(), "release", () -> {
            boolean unlocked = false;
            try (PreparedStatement ps = s.connection.prepareStatement("SELECT pg_advisory_unlock(?)")) {
                ps.setLong(1, s.key);
                try (ResultSet rs = ps.executeQuery()) {
                    unlocked = rs.next() && rs.getBoolean(1);
                }
            } catch (SQLException e) {
                // The session is gone, and its lock with it.
                log.debug("[lock={} state=RELEASING] unlock: {}", entry.lockName(), backend.message(e));
            }
            if (!unlocked || backend.isClosed() || !idle.offer(s.connection)) {
                discard(s.connection);
            }
            return null;
        });
    }

    private void discard(Connection c) {
        backend.closeDedicated(c);
    }

    @Override
    public CompletionStage<Grant> renew(Grant grant) {
        Session s = sessions.get(grant.entry().acquisitionId());
        if (s == null || !s.granted) {
            return CompletableFuture.failedFuture(new EntryLostException(grant.entry(), "its session is gone"));
        }
        long t0 = ticker.read();
        CompletableFuture<Grant> f = new CompletableFuture<>();
        try {
            threads.execute(() -> {
                try (PreparedStatement ps = s.connection.prepareStatement("SELECT 1")) {
                    ps.executeQuery().close();
                    f.complete(new Grant(grant.entry(), grant.fencingToken(), t0 + leaseNanos - marginNanos));
                } catch (SQLException e) {
                    f.completeExceptionally(new EntryLostException(
                            grant.entry(),
                            "its session ended, and PostgreSQL dropped the advisory lock with it (" + backend.message(e)
                                    + ")"));
                }
            });
        } catch (RejectedExecutionException e) {
            f.completeExceptionally(new EntryLostException(grant.entry(), "the client is closed"));
        }
        return f;
    }

    @Override
    public CompletionStage<Optional<QueueEntry>> findOwnEntry(String lockName, String acquisitionId) {
        Session s = sessions.get(acquisitionId);
        return CompletableFuture.completedFuture(Optional.ofNullable(s == null ? null : s.entry));
    }

    /** Ends every session (the server drops their locks) and the idle connections. */
    void close() {
        for (Session s : sessions.values()) {
            s.withdrawn = true;
            try {
                s.connection.abort(Runnable::run);
            } catch (SQLException e) {
                // closed below
            }
            backend.closeDedicated(s.connection);
        }
        sessions.clear();
        Connection c;
        while ((c = idle.poll()) != null) {
            backend.closeDedicated(c);
        }
        threads.shutdownNow();
    }

    private RuntimeException failure(String lockName, String what, SQLException e) {
        return new LockBackendException(
                lockName, JdbcBackend.NAME, what + " on " + backend.describe() + " failed: " + backend.message(e), e);
    }
}
