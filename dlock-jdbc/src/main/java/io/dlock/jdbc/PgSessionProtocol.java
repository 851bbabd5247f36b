package io.dlock.jdbc;

import com.google.errorprone.annotations.concurrent.GuardedBy;
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
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Session mode ({@code ?mode=session}) on PostgreSQL, and with {@code GET_LOCK} on MariaDB/MySQL (a
 * paragraph below): each exclusive lock is a {@code
 * pg_advisory_lock} held by a connection of its own, for as long as that connection's session
 * lives. The server drops the lock the moment the session ends (a client killed, a connection
 * closed), and grants it to the next session waiting in its lock queue (FIFO, one waiter woken).
 * The fencing token comes from the lease table: the holder increments the counter row {@code
 * pg/<name>} right after the advisory lock is granted, on the same connection, so only one session
 * at a time increments it and tokens rise with every grant. The same statement records the grant
 * for the operator (client id, {@code pid@host <grant ms>}: {@link PgSessionInspector}), and the
 * unlock clears that record in its own statement.
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
 * <p>Validity, and the fence after a session that ended without unlocking. A session can end
 * between two checks (PostgreSQL restarted, {@code pg_terminate_backend}, the holder's host cut
 * off): the server drops the lock at once and lets the next session in, while the holder's client
 * learns of it only at its next check. So no check proves more than that the session held the lock
 * when the check ran, and validity is kept short: a grant or check sent at {@code t} makes the
 * lease valid until {@code t + window} (less 1% + 2 ms for clock rates), with {@code window} =
 * half the lease time plus at most 250 ms ({@link #windowMs}), just more than the interval of the
 * engine's checks (a third of the lease time) plus their round trip. The holder records its window
 * in the counter row ({@code expires_ms} of {@code pg/<name>}: a duration there, not a clock
 * reading), and its unlock clears the row's {@code client}. The next session to be granted reads
 * the previous values in the same statement that takes its token: a {@code client} still set means
 * the previous holder's session ended without unlocking, at a moment after its last successful
 * check was sent and before this grant, so its lease can be valid for at most its window from now.
 * The grant is reported only after that window (+ 1% + 10 ms for clock rates) has passed, and its
 * own validity counts from a check sent after the wait. Hence at no instant is an old lease valid
 * while the next one is granted, and a session that dies unannounced frees the lock for the next
 * holder within the dead holder's window. With {@code renewal=false} nothing is checked after the
 * grant, and the window is the lease time. A row written by an older version has no window: the
 * next holder waits its own lease time. A forced release ({@link PgSessionInspector}) sets the
 * window to 0 before it terminates the holder's session: the operator lets the next holder in at
 * once, as in lease mode, and the removed holder learns of it at its next check.
 *
 * <p>Every pinned session sets {@code idle_session_timeout} to 0 (PostgreSQL 14+): a holder between
 * checks is idle, and a database- or role-level timeout would otherwise end its session and drop
 * its lock. A session that is idle but whose client lives stays: its kernel answers keepalives.
 *
 * <p>A holder whose host is cut off (no FIN, no RST: a partition, a power loss) leaves a session
 * the server would keep until TCP keepalive gives up, about 2 h 11 min with the kernel's defaults.
 * Every pinned session therefore sets {@code tcp_keepalives_idle}, {@code _interval} and {@code
 * _count} and, on PostgreSQL 12+, {@code tcp_user_timeout} from {@link #deadPeerMs} (D = half the
 * lease time, at least 2 s): an idle session is probed from D/3 of silence on (whole seconds, at
 * least 1 s), and on Linux the kernel ends the connection once a probe or a reply has gone
 * unacknowledged and nothing was received for D (without tcp_user_timeout: after idle + count ×
 * interval, about D too). The backend, idle in its read, sees the error and exits, and the server
 * drops the lock. {@code tcp_user_timeout} alone would not do: it counts only while data is
 * unacknowledged, and an idle holder's session sends nothing; keepalive probes are that data. A
 * waiter blocked in {@code pg_advisory_lock} is not reading its socket: a dead waiter keeps its
 * place until it is granted, and then its reply goes unacknowledged and it ends within D. With the
 * next holder's fence, a cut-off holder's lock is granted again within about D + 1 s (probe
 * granularity) + its window after its last packet: for the default 30 s lease about 31 s.
 *
 * <p>MariaDB and MySQL ({@code jdbc:mariadb:}, {@code jdbc:mysql:}): the same design on {@code
 * GET_LOCK}, a user lock of the session, named {@code dlock:} and a 256-bit hash of the table and the
 * lock name ({@link #lockName}; the server takes 64 characters); the counter rows are {@code
 * my/<name>}. The waiter blocks in {@code GET_LOCK} with a timeout of a year and no network timeout
 * (a timed-out call would leave the server's queue). The token is a read of the previous record and
 * an upsert ({@code LAST_INSERT_ID(token + 1)}); the unlock clears the record, commits, and only
 * then runs {@code RELEASE_LOCK}, so the next holder reads it as cleared. A check is {@code
 * IS_USED_LOCK(name) = CONNECTION_ID()}: it fails if the session is gone or no longer holds the
 * lock. A cancelled wait is a {@code KILL QUERY} (the driver's {@code Statement.cancel}), and the
 * session is then closed as on PostgreSQL. In place of the keepalive settings each pinned session
 * sets {@code wait_timeout} (and {@code net_write_timeout}) to the longer of D and the window, in
 * whole seconds, plus one: a live holder's checks come sooner, so a server- or account-level
 * timeout cannot end its session, and a cut-off holder's session ends once its lease is no longer
 * valid.
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
    private final long leaseMs;
    /** How long after a check's send time a held lease stays valid (see the class comment). */
    private final long windowMs;

    private final long windowNanos;
    private final long marginNanos;
    /** How long the server keeps a silent client's session: tcp_user_timeout, in ms. */
    private final long deadPeerMs;

    private final long keepaliveIdleS;
    private final long keepaliveIntervalS;
    private final long keepaliveCount;
    private final String tokenSql;
    private final String unlockSql;
    /** MariaDB/MySQL: GET_LOCK instead of advisory locks (see the MariaDB paragraph above). */
    private final boolean mariadb;
    /** The counter rows' prefix: {@code pg/} (PostgreSQL) or {@code my/} (MariaDB/MySQL). */
    private final String rowPrefix;
    /** MariaDB: the session's {@code wait_timeout}, in whole seconds. */
    private final long idleTimeoutS;

    private final String myPrevSql;
    private final String myTokenSql;
    private final String myClearSql;
    private final Map<String, Session> sessions = new ConcurrentHashMap<>();
    private final BlockingQueue<Connection> idle;
    private final ExecutorService threads;

    /**
     * One acquisition's connection. Every step on it (the try, the wait, renewals, the release)
     * runs on its lane, one after the other; only cancelling a wait comes from outside.
     */
    private static final class Session {
        final QueueEntry entry;
        final long key;
        /** MariaDB: the user lock's name ({@link #lockName}). */
        final String lockKey;
        /** Set by the first step; read by later steps of the lane only. */
        volatile @Nullable Connection connection;
        /** Whether the session holds the advisory lock (set and cleared on the lane). */
        volatile boolean locked;
        /** Whether the grant (with its token) was reported. */
        volatile boolean granted;
        /** The grant's token, once taken. */
        volatile long token;
        /** Whether the connection failed and must not be used again. */
        volatile boolean broken;
        /** The statement blocked in pg_advisory_lock, for cancelling it. */
        volatile @Nullable PreparedStatement waiting;

        @GuardedBy("this")
        boolean withdrawn;

        @GuardedBy("this")
        boolean blocked;

        @GuardedBy("this")
        CompletableFuture<?> tail = CompletableFuture.completedFuture(null);

        Session(QueueEntry entry, long key, String lockKey) {
            this.entry = entry;
            this.key = key;
            this.lockKey = lockKey;
        }
    }

    PgSessionProtocol(JdbcBackend backend) {
        this.backend = backend;
        this.ticker = backend.options.ticker();
        this.leaseMs = Math.max(1, backend.options.leaseTime().toMillis());
        // Without renewal nothing is checked after the grant: the grant alone lives the lease time,
        // as before, and records that as its window for the next holder's fence.
        this.windowMs = backend.options.renewal() ? windowMs(leaseMs) : leaseMs;
        this.windowNanos = TimeUnit.MILLISECONDS.toNanos(windowMs);
        this.marginNanos = windowNanos / 100 + TimeUnit.MILLISECONDS.toNanos(2);
        this.deadPeerMs = deadPeerMs(leaseMs);
        // Keepalive settings are whole seconds: probes from a third of deadPeerMs of silence on, every
        // third; the count makes keepalive alone (no tcp_user_timeout: not Linux, PostgreSQL < 12)
        // give up at about deadPeerMs too.
        this.keepaliveIdleS = Math.max(1, deadPeerMs / 3_000);
        this.keepaliveIntervalS = Math.max(1, deadPeerMs / 3_000);
        this.keepaliveCount =
                Math.max(1, (deadPeerMs / 1_000 - keepaliveIdleS + keepaliveIntervalS - 1) / keepaliveIntervalS);
        String table = backend.uri.table();
        this.mariadb = backend.uri.dialect() == JdbcDialect.MARIADB;
        this.rowPrefix = mariadb ? "my/" : "pg/";
        // Longer than the holder's checks are apart (a third of the lease), and than its window: the
        // session of a live holder is never idle that long, and the lease of one cut off is no longer
        // valid when its session ends (with renewal=false: the lease time, plus a second).
        this.idleTimeoutS = (Math.max(deadPeerMs, windowMs) + 999) / 1_000 + 1;
        // The grant's record for the operator (PgSessionInspector): token, client and pid@host <grant ms>;
        // and for the next holder: this holder's window. The previous client and window decide the
        // fence. FOR UPDATE: the previous holder's unlock frees the advisory lock before its statement
        // commits the cleared row; the lock waits for that commit and reads the row as committed, so a
        // clean release is never taken for a session that ended without unlocking.
        this.tokenSql = "WITH prev AS (SELECT client, expires_ms FROM " + table + " WHERE name = ? FOR UPDATE),"
                // The insert reads prev first (so prev locks and reads the row before it is changed);
                // prev, used twice, is computed once.
                + " up AS (INSERT INTO " + table + " AS l (name, token, client, holder, expires_ms) SELECT ?, 1, ?, "
                + JdbcStatements.stamp(JdbcDialect.POSTGRESQL, "?") + ", ? FROM (SELECT count(*) FROM prev) x"
                + " ON CONFLICT (name) DO UPDATE SET token = l.token + 1, client = EXCLUDED.client,"
                + " holder = EXCLUDED.holder, expires_ms = EXCLUDED.expires_ms RETURNING l.token)"
                + " SELECT up.token, prev.client, prev.expires_ms FROM up LEFT JOIN prev ON true";
        // Unlocks and clears the record in one statement, so that a forced release keyed by this grant
        // can no longer match once it is released (the next grant on this very connection included),
        // and so that the next holder knows it needs no fence. The unlock reads c, so the row is
        // updated (and locked until commit) before the advisory lock is freed: an unreferenced
        // data-modifying CTE would run after the unlock, and the next holder could read the record
        // before it is cleared.
        this.unlockSql = "WITH c AS (UPDATE " + table
                + " SET client = NULL, holder = NULL, expires_ms = NULL WHERE name = ? AND token = ? RETURNING 1)"
                + " SELECT pg_advisory_unlock(?) FROM (SELECT count(*) FROM c) x";
        if (mariadb) {
            // MariaDB's user locks are freed by RELEASE_LOCK, a statement of its own, after the record
            // was cleared and committed: the next holder reads the row as cleared (no fence needed).
            // Only the session holding the user lock writes the row, so no row lock is needed to read
            // the previous holder's record before the token's upsert.
            myPrevSql = "SELECT client, expires_ms FROM " + table + " WHERE name = ?";
            myTokenSql = "INSERT INTO " + table + " (name, token, client, holder, expires_ms) VALUES (?,"
                    + " LAST_INSERT_ID(1), ?, " + JdbcStatements.stamp(JdbcDialect.MARIADB, "?") + ", ?)"
                    + " ON DUPLICATE KEY UPDATE token = LAST_INSERT_ID(token + 1), client = VALUES(client),"
                    + " holder = VALUES(holder), expires_ms = VALUES(expires_ms)";
            myClearSql = "UPDATE " + table
                    + " SET client = NULL, holder = NULL, expires_ms = NULL WHERE name = ? AND token = ?";
        } else {
            myPrevSql = myTokenSql = myClearSql = "";
        }
        this.idle = new ArrayBlockingQueue<>(backend.uri.maxConnections());
        AtomicInteger n = new AtomicInteger();
        // A thread per waiting or working session: a waiter blocks in pg_advisory_lock.
        this.threads = Executors.newCachedThreadPool(r -> {
            Thread t = new Thread(r, "dlock-jdbc-session-" + n.incrementAndGet());
            t.setDaemon(true);
            return t;
        });
    }

    /**
     * The validity a check confirms, from its send time: half the lease time (the engine checks
     * every third) plus up to 250 ms, so that a check's round trip and the engine's loss threshold
     * fit between two checks even with short leases.
     */
    static long windowMs(long leaseMs) {
        return Math.max(1, leaseMs / 2 + Math.min(leaseMs / 6, 250));
    }

    /**
     * How long after the last segment from a silent client the server ends its session: half the
     * lease time, at least 2 s (keepalive counts in whole seconds), so that with the next holder's
     * fence (the dead holder's window) the lock is free again within about the lease time + 1 s.
     */
    static long deadPeerMs(long leaseMs) {
        return Math.max(2_000, leaseMs / 2);
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

    /**
     * MariaDB/MySQL: the user lock of a lock, {@code dlock:} and 256 bits of SHA-256 over the table
     * and the name in base64url (49 characters, within the 64 that GET_LOCK takes): a hash so long
     * that two names never merge into one lock; the counter row keeps the full name.
     */
    static String lockName(String table, String name) {
        try {
            byte[] digest =
                    MessageDigest.getInstance("SHA-256").digest((table + "/" + name).getBytes(StandardCharsets.UTF_8));
            return "dlock:" + java.util.Base64.getUrlEncoder().withoutPadding().encodeToString(digest);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is required by every Java platform", e);
        }
    }

    /** Runs {@code work} on the session's lane, after every step queued before it. */
    private <T> CompletableFuture<T> onLane(Session s, String what, Work<T> work) {
        synchronized (s) {
            CompletableFuture<T> f = new CompletableFuture<>();
            s.tail.whenComplete((x, e) -> {
                try {
                    threads.execute(() -> {
                        try {
                            f.complete(work.run());
                        } catch (SQLException e2) {
                            f.completeExceptionally(failure(s.entry.lockName(), what, e2));
                        } catch (RuntimeException e2) {
                            f.completeExceptionally(e2);
                        }
                    });
                } catch (RejectedExecutionException e2) {
                    f.completeExceptionally(
                            new LockBackendException(s.entry.lockName(), JdbcBackend.NAME, "client is closed", null));
                }
            });
            s.tail = f;
            return f;
        }
    }

    @FunctionalInterface
    private interface Work<T> {
        @Nullable
        T run() throws SQLException;
    }

    @Override
    public CompletionStage<Position> enqueue(LockRequest request) {
        if (request.mode() != LockMode.EXCLUSIVE) {
            return CompletableFuture.failedFuture(new UnsupportedOperationException(
                    "dlock-jdbc's session mode has exclusive locks only, not " + request.mode()));
        }
        String name = request.lockName();
        QueueEntry entry =
                new QueueEntry(name, request.acquisitionId(), rowPrefix + name + "#" + request.acquisitionId(), 0, 0);
        Session s =
                new Session(entry, key(backend.uri.table(), name), mariadb ? lockName(backend.uri.table(), name) : "");
        sessions.put(entry.acquisitionId(), s);
        long t0 = ticker.read();
        CompletableFuture<Position> f = onLane(s, "acquire", () -> {
            boolean got;
            Connection kept = idle.poll();
            s.connection = kept != null ? kept : newConnection();
            try {
                got = tryLock(s);
            } catch (SQLException e) {
                if (kept == null) {
                    s.broken = true;
                    throw e;
                }
                // A kept connection that died while idle: once more on a new one.
                discard(kept);
                s.connection = newConnection();
                try {
                    got = tryLock(s);
                } catch (SQLException again) {
                    s.broken = true;
                    throw again;
                }
            }
            if (!got) {
                return Position.waiting(entry, mariadb ? "GET_LOCK" : "pg_advisory_lock");
            }
            s.locked = true;
            return Position.granted(grant(s, t0));
        });
        f.whenComplete((p, e) -> {
            if (e != null && sessions.remove(entry.acquisitionId(), s)) {
                onLane(s, "clean-up", () -> {
                    cleanUp(s);
                    return null;
                });
            }
        });
        return f;
    }

    /**
     * A new pinned connection, named {@code dlock_<client> <pid>} for the operator's view of its
     * waits ({@link PgSessionInspector}); a DataSource's connection keeps the application's name.
     */
    private Connection newConnection() throws SQLException {
        Connection c = backend.dedicatedConnection();
        if (mariadb) {
            try (java.sql.Statement st = c.createStatement()) {
                // A holder is idle between its checks; the server's or the account's wait_timeout
                // could end its session and free its lock, and a holder cut off without FIN or RST
                // would keep its session until TCP keepalive gives up (hours). So the session ends
                // after idleTimeoutS of silence: later than a live holder's checks come, and after a
                // cut-off holder's lease has run out.
                st.execute("SET SESSION wait_timeout = " + idleTimeoutS + ", net_write_timeout = " + idleTimeoutS);
            } catch (SQLException e) {
                discard(c);
                throw e;
            }
            return c;
        }
        try {
            int major = c.getMetaData().getDatabaseMajorVersion();
            StringBuilder sql = new StringBuilder("SELECT 1");
            // A holder cut off without FIN or RST (partition, power loss) would keep its session, and
            // the lock, until the server's TCP keepalive gives up: about 2 h 11 min by default. Probes
            // from keepaliveIdleS of silence on, and (Linux, PostgreSQL 12+) tcp_user_timeout, end it
            // within about deadPeerMs of the last segment received from the client (see the class
            // comment).
            sql.append(", set_config('tcp_keepalives_idle', '")
                    .append(keepaliveIdleS)
                    .append("', false), set_config('tcp_keepalives_interval', '")
                    .append(keepaliveIntervalS)
                    .append("', false), set_config('tcp_keepalives_count', '")
                    .append(keepaliveCount)
                    .append("', false)");
            if (major >= 12) {
                sql.append(", set_config('tcp_user_timeout', '")
                        .append(deadPeerMs)
                        .append("', false)");
            }
            if (major >= 14) {
                // A holder is idle between checks: a database- or role-level idle_session_timeout
                // would end its session, and the server would drop its lock (and let the next one in).
                sql.append(", set_config('idle_session_timeout', '0', false)");
            }
            boolean named = !backend.borrowsConnections();
            if (named) {
                sql.append(", set_config('application_name', ?, false)");
            }
            try (PreparedStatement ps = c.prepareStatement(sql.toString())) {
                if (named) {
                    ps.setString(1, PgSessionInspector.applicationName(backend.clientId));
                }
                ps.executeQuery().close();
            }
        } catch (SQLException e) {
            discard(c);
            throw e;
        }
        return c;
    }

    /** The session's connection, set by its first step. */
    private static Connection connectionOf(Session s) {
        Connection c = s.connection;
        if (c == null) {
            throw new IllegalStateException("session of " + s.entry.key() + " has no connection yet");
        }
        return c;
    }

    private boolean tryLock(Session s) throws SQLException {
        if (mariadb) {
            return getLock(s, 0);
        }
        try (PreparedStatement ps = connectionOf(s).prepareStatement("SELECT pg_try_advisory_lock(?)")) {
            ps.setLong(1, s.key);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getBoolean(1);
            }
        }
    }

    /** MariaDB: GET_LOCK for up to {@code seconds}; true if held. NULL (an error, a kill) is a failure. */
    private static boolean getLock(Session s, long seconds) throws SQLException {
        try (PreparedStatement ps = connectionOf(s).prepareStatement("SELECT GET_LOCK(?, " + seconds + ")")) {
            if (seconds > 0) {
                s.waiting = ps;
            }
            ps.setString(1, s.lockKey);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                int got = rs.getInt(1);
                if (rs.wasNull()) {
                    throw new SQLException("GET_LOCK returned NULL (its query was killed)", "70100");
                }
                return got == 1;
            }
        } finally {
            s.waiting = null;
        }
    }

    /**
     * Takes the token on the holding session; the validity counts from {@code t0}, or, after the
     * fence for a previous holder whose session ended without unlocking, from a check sent after it.
     */
    private Grant grant(Session s, long t0) throws SQLException {
        long token;
        long fenceMs = -1;
        String name = rowPrefix + s.entry.lockName();
        if (mariadb) {
            String prevClient = null;
            long prevWindow = -1;
            try (PreparedStatement ps = connectionOf(s).prepareStatement(myPrevSql)) {
                ps.setString(1, name);
                try (ResultSet rs = ps.executeQuery()) {
                    if (rs.next()) {
                        prevClient = rs.getString(1);
                        prevWindow = rs.getLong(2);
                        if (rs.wasNull()) {
                            prevWindow = leaseMs;
                        }
                    }
                }
            }
            if (prevClient != null) {
                fenceMs = prevWindow;
            }
            try (PreparedStatement ps =
                    connectionOf(s).prepareStatement(myTokenSql, java.sql.Statement.RETURN_GENERATED_KEYS)) {
                ps.setString(1, name);
                ps.setString(2, backend.clientId);
                ps.setString(3, backend.holder);
                ps.setLong(4, windowMs);
                ps.executeUpdate();
                try (ResultSet rs = ps.getGeneratedKeys()) {
                    if (!rs.next()) {
                        throw new SQLException("the token's upsert did not return LAST_INSERT_ID()");
                    }
                    token = rs.getLong(1);
                }
            }
        } else {
            try (PreparedStatement ps = connectionOf(s).prepareStatement(tokenSql)) {
                ps.setString(1, name);
                ps.setString(2, name);
                ps.setString(3, backend.clientId);
                ps.setString(4, backend.holder);
                ps.setLong(5, windowMs);
                try (ResultSet rs = ps.executeQuery()) {
                    rs.next();
                    token = rs.getLong(1);
                    if (rs.getString(2) != null) {
                        long previous = rs.getLong(3);
                        // An older version's holder recorded no window: its lease was its lease time. A
                        // window of 0 is a forced release's: the operator let the next holder in at once.
                        fenceMs = rs.wasNull() ? leaseMs : previous;
                    }
                }
            }
        }
        s.token = token;
        long from = t0;
        if (fenceMs > 0) {
            long waitNanos = TimeUnit.MILLISECONDS.toNanos(fenceMs + fenceMs / 100 + 10);
            log.debug(
                    "[lock={} state=QUEUED] the previous holder's session ended without unlocking: waiting {} ms"
                            + " for its lease to run out",
                    s.entry.lockName(),
                    TimeUnit.NANOSECONDS.toMillis(waitNanos));
            fence(s, waitNanos);
            from = ticker.read();
            try (PreparedStatement ps = connectionOf(s).prepareStatement("SELECT 1")) {
                ps.executeQuery().close();
            }
        }
        s.granted = true;
        return new Grant(s.entry, token, from + windowNanos - marginNanos);
    }

    /** Waits out a fence on the lane; a withdrawal ends it early (its release step then unlocks). */
    private void fence(Session s, long waitNanos) {
        long end = ticker.read() + waitNanos;
        synchronized (s) {
            for (long left = waitNanos; left > 0; left = end - ticker.read()) {
                if (s.withdrawn) {
                    throw new EntryLostException(s.entry, "it was withdrawn");
                }
                try {
                    TimeUnit.NANOSECONDS.timedWait(s, Math.min(left, TimeUnit.MILLISECONDS.toNanos(20)));
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new EntryLostException(s.entry, "its client is closing");
                }
            }
        }
    }

    @Override
    public CompletionStage<Position> awaitTurn(Position waiting) {
        Session s = sessions.get(waiting.entry().acquisitionId());
        if (s == null) {
            return CompletableFuture.failedFuture(new EntryLostException(waiting.entry(), "it is not waiting here"));
        }
        return onLane(s, "waiting", () -> {
            synchronized (s) {
                if (s.withdrawn) {
                    throw new EntryLostException(s.entry, "it was withdrawn");
                }
                s.blocked = true;
            }
            try {
                if (mariadb) {
                    waitForUserLock(s);
                } else {
                    waitForAdvisoryLock(s);
                }
                s.locked = true;
            } catch (SQLException e) {
                // Even a wait cancelled by a withdrawal (57014) may hold the lock: when the cancel
                // lands just as the holder's unlock grants it, PostgreSQL keeps the granted
                // session-level lock and still fails the statement. So the session is ended (its
                // connection closed), never kept idle with a lock no one knows of.
                s.broken = true;
                synchronized (s) {
                    s.blocked = false;
                    if (s.withdrawn) {
                        throw new EntryLostException(s.entry, "it was withdrawn");
                    }
                }
                throw e;
            } finally {
                s.waiting = null;
            }
            synchronized (s) {
                s.blocked = false;
                if (s.withdrawn) {
                    throw new EntryLostException(s.entry, "it was withdrawn"); // the release's step unlocks
                }
            }
            // The validity counts from the grant's own reading: the wait itself guarantees nothing.
            return Position.granted(grant(s, ticker.read()));
        });
    }

    /**
     * PostgreSQL: waits in pg_advisory_lock for as long as it takes, with the connection's network
     * timeout lifted meanwhile, as for MariaDB's GET_LOCK: the wait is silence on the socket, and the
     * driver's socketTimeout (30 s or more) ended every longer wait with an I/O error. A dead server
     * or a cut-off path is still noticed, by the session's TCP keepalive and user timeout; a
     * withdrawal cancels the statement.
     */
    private static void waitForAdvisoryLock(Session s) throws SQLException {
        Connection c = connectionOf(s);
        int before = c.getNetworkTimeout();
        c.setNetworkTimeout(Runnable::run, 0);
        try (PreparedStatement ps = c.prepareStatement("SELECT pg_advisory_lock(?)")) {
            s.waiting = ps;
            ps.setLong(1, s.key);
            ps.executeQuery().close();
        } finally {
            c.setNetworkTimeout(Runnable::run, before);
        }
    }

    /**
     * MariaDB: waits in GET_LOCK for as long as it takes (the server queues it, FIFO), with the
     * connection's network timeout lifted meanwhile: a wait is silence on the socket.
     */
    private static void waitForUserLock(Session s) throws SQLException {
        Connection c = connectionOf(s);
        int before = c.getNetworkTimeout();
        c.setNetworkTimeout(Runnable::run, 0);
        try {
            // A year per statement: a timed-out GET_LOCK would leave the server's queue and lose its place.
            while (!getLock(s, 31_536_000L)) {
                synchronized (s) {
                    if (s.withdrawn) {
                        throw new EntryLostException(s.entry, "it was withdrawn");
                    }
                }
            }
        } finally {
            c.setNetworkTimeout(Runnable::run, before);
        }
    }

    @Override
    public CompletionStage<Void> release(QueueEntry entry) {
        Session s = sessions.remove(entry.acquisitionId());
        if (s == null) {
            return CompletableFuture.completedFuture(null);
        }
        boolean blocked;
        synchronized (s) {
            s.withdrawn = true;
            blocked = s.blocked;
            if (blocked) {
                // The cancel (KILL QUERY on MariaDB, a cancel request on PostgreSQL) ends whatever
                // runs on the connection when it lands, which may be after the wait ended: a
                // connection kept for the next session would have that session's statement killed.
                // So this one is never kept (cleanUp discards it; its session's end unlocks).
                s.broken = true;
            }
        }
        if (blocked) {
            cancelWait(s);
        }
        return onLane(s, "release", () -> {
            cleanUp(s);
            return null;
        });
    }

    /**
     * Cancels a wait in pg_advisory_lock (a cancel request on a connection of its own, as {@code
     * Statement.cancel} sends it), again every 50 ms while the wait goes on (a cancel that lands
     * before the query runs is lost), and after 5 s ends the session instead.
     */
    private void cancelWait(Session s) {
        try {
            threads.execute(() -> {
                for (int i = 0; i < 100; i++) {
                    synchronized (s) {
                        if (!s.blocked) {
                            return;
                        }
                    }
                    PreparedStatement st = s.waiting;
                    try {
                        if (st != null) {
                            st.cancel();
                        }
                        Thread.sleep(50); // bounded: 100 tries
                    } catch (SQLException e) {
                        log.debug("[lock={} state=CANCELLED] cancel: {}", s.entry.lockName(), backend.message(e));
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                        break;
                    }
                }
                s.broken = true;
                Connection c = s.connection;
                try {
                    if (c != null) {
                        c.abort(Runnable::run);
                    }
                } catch (SQLException e) {
                    // closed by cleanUp
                }
            });
        } catch (RejectedExecutionException e) {
            // closing: close() aborts every session
        }
    }

    /** Unlocks if locked, then keeps the connection for the next lock or closes it. On the lane. */
    private void cleanUp(Session s) {
        Connection c = s.connection;
        if (c == null) {
            return;
        }
        if (s.locked && !s.broken && mariadb) {
            try {
                try (PreparedStatement ps = c.prepareStatement(myClearSql)) {
                    ps.setString(1, rowPrefix + s.entry.lockName());
                    ps.setLong(2, s.token);
                    ps.executeUpdate();
                }
                try (PreparedStatement ps = c.prepareStatement("SELECT RELEASE_LOCK(?)")) {
                    ps.setString(1, s.lockKey);
                    try (ResultSet rs = ps.executeQuery()) {
                        s.locked = !(rs.next() && rs.getInt(1) == 1);
                    }
                }
            } catch (SQLException e) {
                s.broken = true;
                log.debug("[lock={} state=RELEASING] unlock: {}", s.entry.lockName(), backend.message(e));
            }
        } else if (s.locked && !s.broken) {
            try (PreparedStatement ps = c.prepareStatement(unlockSql)) {
                ps.setString(1, rowPrefix + s.entry.lockName());
                ps.setLong(2, s.token);
                ps.setLong(3, s.key);
                try (ResultSet rs = ps.executeQuery()) {
                    s.locked = !(rs.next() && rs.getBoolean(1));
                }
            } catch (SQLException e) {
                // The session is gone, and its lock with it.
                s.broken = true;
                log.debug("[lock={} state=RELEASING] unlock: {}", s.entry.lockName(), backend.message(e));
            }
        }
        if (s.locked || s.broken || backend.isClosed() || !idle.offer(c)) {
            discard(c);
        }
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
        return onLane(s, "renewal", () -> {
            try (PreparedStatement ps = connectionOf(s)
                    .prepareStatement(mariadb ? "SELECT IS_USED_LOCK(?) = CONNECTION_ID()" : "SELECT 1")) {
                if (mariadb) {
                    ps.setString(1, s.lockKey);
                }
                try (ResultSet rs = ps.executeQuery()) {
                    if (mariadb && !(rs.next() && rs.getBoolean(1))) {
                        s.broken = true;
                        throw new EntryLostException(
                                grant.entry(), "its session no longer holds the user lock " + s.lockKey);
                    }
                }
                return new Grant(grant.entry(), grant.fencingToken(), t0 + windowNanos - marginNanos);
            } catch (SQLException e) {
                s.broken = true;
                throw new EntryLostException(
                        grant.entry(),
                        "its session ended, and "
                                + (mariadb ? "MariaDB dropped the user lock" : "PostgreSQL dropped the advisory lock")
                                + " with it (" + backend.message(e)
                                + ")");
            }
        });
    }

    @Override
    public CompletionStage<Optional<QueueEntry>> findOwnEntry(String lockName, String acquisitionId) {
        Session s = sessions.get(acquisitionId);
        return CompletableFuture.completedFuture(Optional.ofNullable(s == null ? null : s.entry));
    }

    /** Ends every session (the server drops their locks) and the idle connections. */
    void close() {
        for (Session s : sessions.values()) {
            synchronized (s) {
                s.withdrawn = true;
            }
            Connection c = s.connection;
            if (c != null) {
                try {
                    c.abort(Runnable::run);
                } catch (SQLException e) {
                    // closed below
                }
                backend.closeDedicated(c);
            }
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
