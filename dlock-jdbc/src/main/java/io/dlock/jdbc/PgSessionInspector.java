package io.dlock.jdbc;

import io.dlock.LockBackendException;
import io.dlock.spi.EntrySnapshot;
import io.dlock.spi.LockInspector;
import io.dlock.spi.LockKind;
import io.dlock.spi.LockMode;
import io.dlock.spi.LockSnapshot;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;
import org.jspecify.annotations.Nullable;

/**
 * The operator view of PostgreSQL's session mode ({@link PgSessionProtocol}): the advisory locks
 * themselves live in the server's lock manager, so holders and waiters come from {@code pg_locks}
 * (advisory, one bigint key) joined with {@code pg_stat_activity}; what dlock records comes from
 * the lock's counter row {@code pg/<name>} in the lease table, which the holder's connection
 * writes right after the grant (token, client id, {@code pid@host <grant ms>}) and clears in the
 * statement that unlocks.
 *
 * <p>Names: an advisory key is 64 bits of a hash and cannot be reversed; a key is shown under a
 * name only if a counter row of that name hashes to it (every lock granted once has one). A lock
 * whose first holder has not yet written its row is not shown until it has.
 *
 * <p>A holder whose row does not (yet) name it (granted by the server, token not yet taken) is
 * shown as the head waiter with token 0: dlock has not granted it yet. Waiters are ordered by
 * {@code pg_locks.waitstart}, the order in which PostgreSQL queued them; it grants an exclusive
 * advisory lock to its queue in that order.
 *
 * <p>An entry's key is {@code <name>#<backend pid>#<token>}. A forced release terminates that
 * backend ({@code pg_terminate_backend}) only if it still holds the lock's advisory lock and the
 * counter row still names that grant (same token, a client recorded, and the backend's {@code
 * application_name} names that client where it is dlock's): a key read earlier never ends a later
 * holder. The server then drops the lock and grants the next waiter, which takes the next token.
 *
 * <p>Concurrency: stateless but for the watches; each polls on a thread of its own.
 */
final class PgSessionInspector implements LockInspector {
    private static final char ESCAPE = '!';

    private final JdbcBackend backend;
    private final String table;
    private final Duration timeout;
    private final String readRows;
    private final String readLocks;
    private final String terminate;
    private final String unfence;
    private final String refence;
    private final AtomicInteger watchThreads = new AtomicInteger();

    PgSessionInspector(JdbcBackend backend) {
        this.backend = backend;
        this.table = backend.uri.table();
        this.timeout = backend.options.connectTimeout().multipliedBy(3);
        readRows = "SELECT name, token, client, holder FROM " + table + " WHERE name LIKE ? ESCAPE '" + ESCAPE + "'";
        String thisDatabase = "l.database = (SELECT oid FROM pg_database WHERE datname = current_database())";
        readLocks = "SELECT l.pid, l.granted, l.classid, l.objid, a.application_name,"
                + " coalesce(a.client_hostname, host(a.client_addr)),"
                + " (EXTRACT(EPOCH FROM l.waitstart) * 1000)::bigint"
                + " FROM pg_locks l LEFT JOIN pg_stat_activity a ON a.pid = l.pid"
                + " WHERE l.locktype = 'advisory' AND l.objsubid = 1 AND " + thisDatabase
                + " ORDER BY l.granted DESC, l.waitstart NULLS LAST, l.pid";
        // One statement: the backend must hold the advisory lock now, and the row must still name
        // the grant that was shown (its token, a client recorded, that client's session).
        // A forced release lets the next holder in at once, as in lease mode: window 0 in the row tells
        // it to skip the fence (PgSessionProtocol); put back if the termination matched nothing.
        unfence = "UPDATE " + table + " t SET expires_ms = 0 FROM (SELECT name, expires_ms FROM " + table
                + " WHERE name = ? AND token = ? AND client IS NOT NULL FOR UPDATE) o"
                + " WHERE t.name = o.name RETURNING o.expires_ms";
        refence = "UPDATE " + table + " SET expires_ms = ? WHERE name = ? AND token = ? AND expires_ms = 0";
        terminate = "SELECT pg_terminate_backend(l.pid) FROM pg_locks l JOIN " + table
                + " t ON t.name = ? AND t.token = ? AND t.client IS NOT NULL"
                + " LEFT JOIN pg_stat_activity a ON a.pid = l.pid"
                + " WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1 AND l.classid = ?"
                + " AND l.objid = ? AND l.pid = ? AND " + thisDatabase
                + " AND (a.application_name IS NULL OR a.application_name NOT LIKE 'dlock!_%' ESCAPE '!'"
                + " OR split_part(a.application_name, ' ', 1) = 'dlock_' || t.client)";
    }

    /** The application_name of a session connection: {@code dlock_<client> <pid>} (at most 63 characters). */
    static String applicationName(String clientId) {
        return PgListener.applicationName(clientId) + " "
                + ProcessHandle.current().pid();
    }

    @Override
    public List<LockSnapshot> inspect(String namePrefix) {
        Objects.requireNonNull(namePrefix, "namePrefix");
        return read(namePrefix, null);
    }

    private record Row(String name, long token, @Nullable String client, @Nullable String holder) {}

    private record Session(
            long pid,
            boolean granted,
            long key,
            @Nullable String applicationName,
            @Nullable String host,
            @Nullable Long waitStartMs) {

        /** The dlock client id from the application_name, or null for other sessions. */
        @Nullable
        String clientId() {
            String a = applicationName;
            if (a == null || !a.startsWith("dlock_")) {
                return null;
            }
            int space = a.indexOf(' ');
            String id = a.substring("dlock_".length(), space < 0 ? a.length() : space);
            return id.matches("[0-9a-f]{32}") ? id : null;
        }

        long clientPid() {
            String a = applicationName;
            int space = a == null ? -1 : a.indexOf(' ');
            if (a == null || space < 0 || clientId() == null) {
                return -1;
            }
            try {
                return Long.parseLong(a.substring(space + 1));
            } catch (NumberFormatException e) {
                return -1;
            }
        }
    }

    private List<LockSnapshot> read(String prefix, @Nullable String exactName) {
        String pattern = "pg/" + JdbcInspector.likePrefix(prefix);
        record Read(List<Row> rows, List<Session> sessions) {}
        Read r = await(
                backend.submit(c -> {
                    List<Row> rows = new ArrayList<>();
                    List<Session> sessions = new ArrayList<>();
                    // The rows first: a lock held now wrote its row before its session shows here.
                    try (PreparedStatement ps = c.prepareStatement(readRows)) {
                        ps.setString(1, pattern);
                        try (ResultSet rs = ps.executeQuery()) {
                            while (rs.next()) {
                                String name = rs.getString(1).substring(3);
                                if (exactName == null || exactName.equals(name)) {
                                    rows.add(new Row(name, rs.getLong(2), rs.getString(3), rs.getString(4)));
                                }
                            }
                        }
                    }
                    if (rows.isEmpty()) {
                        return new Read(rows, sessions);
                    }
                    try (PreparedStatement ps = c.prepareStatement(readLocks);
                            ResultSet rs = ps.executeQuery()) {
                        while (rs.next()) {
                            long key = (rs.getLong(3) << 32) | (rs.getLong(4) & 0xffffffffL);
                            long waitStart = rs.getLong(7);
                            Long since = rs.wasNull() ? null : waitStart;
                            sessions.add(new Session(
                                    rs.getLong(1), rs.getBoolean(2), key, rs.getString(5), rs.getString(6), since));
                        }
                    }
                    return new Read(rows, sessions);
                }),
                exactName);
        Map<Long, List<Session>> byKey = new HashMap<>();
        for (Session s : r.sessions()) {
            byKey.computeIfAbsent(s.key(), k -> new ArrayList<>()).add(s);
        }
        TreeMap<String, LockSnapshot> out = new TreeMap<>();
        for (Row row : r.rows()) {
            List<Session> sessions = byKey.get(PgSessionProtocol.key(table, row.name()));
            if (sessions == null) {
                continue;
            }
            List<EntrySnapshot> holders = new ArrayList<>();
            List<EntrySnapshot> waiters = new ArrayList<>();
            for (Session s : sessions) { // granted first, then waiters in queue order
                String sessionClient = s.clientId();
                String rowClient = row.client();
                String app = s.applicationName();
                boolean recorded = s.granted()
                        && rowClient != null
                        && (app == null || !app.startsWith("dlock_") || rowClient.equals(sessionClient));
                if (recorded) {
                    EntrySnapshot e = JdbcInspector.entry(
                            row.name() + "#" + s.pid() + "#" + row.token(),
                            LockMode.EXCLUSIVE,
                            1,
                            row.client(),
                            row.holder(),
                            row.token(),
                            0);
                    holders.add(new EntrySnapshot(
                            e.key(),
                            e.mode(),
                            1,
                            e.clientId(),
                            e.host(),
                            e.pid(),
                            Boolean.TRUE,
                            e.backendToken(),
                            e.since(),
                            null));
                } else {
                    Long ws = s.waitStartMs();
                    waiters.add(new EntrySnapshot(
                            row.name() + "#" + s.pid() + "#0",
                            LockMode.EXCLUSIVE,
                            1,
                            sessionClient,
                            s.host(),
                            s.clientPid(),
                            Boolean.TRUE,
                            0,
                            ws == null ? null : Instant.ofEpochMilli(ws),
                            null));
                }
            }
            out.put(row.name(), new LockSnapshot(row.name(), LockKind.EXCLUSIVE, 1, holders, waiters));
        }
        return new ArrayList<>(out.values());
    }

    @Override
    public List<String> forceRelease(String name, Collection<String> keys) {
        Objects.requireNonNull(name, "name");
        if (name.isEmpty()) {
            throw new IllegalArgumentException("a lock name is required");
        }
        record Target(String key, long pid, long token) {}
        List<Target> targets = new ArrayList<>();
        for (String key : new LinkedHashSet<>(keys)) {
            int last = key.lastIndexOf('#');
            int mid = last <= 0 ? -1 : key.lastIndexOf('#', last - 1);
            long pid = -1;
            long token = -1;
            if (mid > 0 && key.substring(0, mid).equals(name)) {
                try {
                    pid = Long.parseLong(key.substring(mid + 1, last));
                    token = Long.parseLong(key.substring(last + 1));
                } catch (NumberFormatException e) {
                    token = -1;
                }
            }
            if (token < 0 || pid <= 0) {
                throw new IllegalArgumentException("'" + key + "' is no entry of lock '" + name + "'");
            }
            targets.add(new Target(key, pid, token));
        }
        long key = PgSessionProtocol.key(table, name);
        List<String> removed = new ArrayList<>();
        for (Target t : targets) {
            if (t.token() == 0) {
                continue; // a waiter (or a grant not yet recorded): nothing granted to remove
            }
            Boolean done = await(
                    backend.submit(c -> {
                        Long window = null;
                        boolean marked = false;
                        try (PreparedStatement ps = c.prepareStatement(unfence)) {
                            ps.setString(1, "pg/" + name);
                            ps.setLong(2, t.token());
                            try (ResultSet rs = ps.executeQuery()) {
                                if (rs.next()) {
                                    marked = true;
                                    long w = rs.getLong(1);
                                    window = rs.wasNull() ? null : w;
                                }
                            }
                        }
                        boolean terminated;
                        try (PreparedStatement ps = c.prepareStatement(terminate)) {
                            ps.setString(1, "pg/" + name);
                            ps.setLong(2, t.token());
                            ps.setLong(3, key >>> 32);
                            ps.setLong(4, key & 0xffffffffL);
                            ps.setLong(5, t.pid());
                            try (ResultSet rs = ps.executeQuery()) {
                                terminated = rs.next() && rs.getBoolean(1);
                            }
                        }
                        if (marked && !terminated) {
                            try (PreparedStatement ps = c.prepareStatement(refence)) {
                                if (window == null) {
                                    ps.setNull(1, java.sql.Types.BIGINT);
                                } else {
                                    ps.setLong(1, window);
                                }
                                ps.setString(2, "pg/" + name);
                                ps.setLong(3, t.token());
                                ps.executeUpdate();
                            }
                        }
                        return terminated;
                    }),
                    name);
            if (Boolean.TRUE.equals(done)) {
                removed.add(t.key());
            }
        }
        return removed;
    }

    @Override
    public Watch watch(
            String name, Duration pollInterval, Consumer<List<LockSnapshot>> listener, Consumer<Throwable> onError) {
        Objects.requireNonNull(name, "name");
        if (name.isEmpty()) {
            throw new IllegalArgumentException("a lock name is required");
        }
        if (pollInterval.isNegative() || pollInterval.isZero()) {
            throw new IllegalArgumentException("pollInterval must be positive: " + pollInterval);
        }
        Poller p = new Poller(name, Math.max(1, pollInterval.toMillis()), listener, onError);
        Thread t = new Thread(p::run, "dlock-jdbc-session-watch-" + watchThreads.incrementAndGet());
        t.setDaemon(true);
        t.start();
        return p;
    }

    /** A polled watch: advisory locks notify nobody, so the lock is read every interval. */
    private final class Poller implements Watch {
        private final String name;
        private final long intervalMs;
        private final Consumer<List<LockSnapshot>> listener;
        private final Consumer<Throwable> onError;
        private final AtomicBoolean closed = new AtomicBoolean();
        private final Object sleep = new Object();
        // The watch thread's alone.
        private @Nullable List<String> last;

        Poller(String name, long intervalMs, Consumer<List<LockSnapshot>> listener, Consumer<Throwable> onError) {
            this.name = name;
            this.intervalMs = intervalMs;
            this.listener = listener;
            this.onError = onError;
        }

        void run() {
            while (!closed.get()) {
                try {
                    List<LockSnapshot> snapshot = read(name, name);
                    List<String> signature = JdbcInspector.signature(snapshot);
                    if (!signature.equals(last) && !closed.get()) {
                        last = signature;
                        listener.accept(snapshot);
                    }
                } catch (RuntimeException e) {
                    if (!closed.get()) {
                        onError.accept(e);
                    }
                }
                synchronized (sleep) {
                    if (!closed.get()) {
                        try {
                            sleep.wait(intervalMs); // woken early by close()
                        } catch (InterruptedException e) {
                            closed.set(true);
                        }
                    }
                }
            }
        }

        @Override
        public void close() {
            if (closed.compareAndSet(false, true)) {
                synchronized (sleep) {
                    sleep.notifyAll();
                }
            }
        }
    }

    private <T> T await(CompletableFuture<T> f, @Nullable String lockName) {
        try {
            return f.get(timeout.toMillis(), TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new LockBackendException(lockName, JdbcBackend.NAME, "interrupted while reading the database", e);
        } catch (ExecutionException e) {
            Throwable cause = e.getCause() == null ? e : e.getCause();
            throw new LockBackendException(
                    lockName, JdbcBackend.NAME, "inspection failed: " + backend.message(cause), cause);
        } catch (TimeoutException e) {
            f.cancel(false);
            throw new LockBackendException(
                    lockName, JdbcBackend.NAME, "the database did not answer within " + timeout, e);
        }
    }
}
