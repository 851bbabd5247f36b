package io.dlock.jdbc;

import io.dlock.LockBackendException;
import io.dlock.spi.EntrySnapshot;
import io.dlock.spi.LockInspector;
import io.dlock.spi.LockKind;
import io.dlock.spi.LockMode;
import io.dlock.spi.LockSnapshot;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;
import org.jspecify.annotations.Nullable;
import org.postgresql.PGConnection;
import org.postgresql.PGNotification;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The operator view of a lease-mode SQL backend: reads the lock table and its waiters table as
 * {@link JdbcStatements} lays them out, without changing the protocol.
 *
 * <p>What the tables show: an exclusive lock's holder is its lock row (owner, client, token,
 * expiry, and the holder column {@code pid@host <grant ms>} its grant wrote); read-write and
 * semaphore entries and every waiter are rows of the waiters table ({@code rw/<name>}, {@code
 * s/<name>}), whose holder column says {@code pid@host <ms>} of their enqueue, rewritten at their
 * grant. Times come from the database's clock. Rows written by an earlier version lack the time (or
 * the whole holder column): those fields are null.
 *
 * <p>An entry's key is {@code <row name>#<acquisition>#<token>}: a forced release takes only a
 * grant whose row still has that owner and token. On PostgreSQL an entry's client counts as
 * connected while its LISTEN session ({@code application_name} {@code dlock_<client>}) is open;
 * elsewhere {@code connected} is null.
 *
 * <p>A forced release on PostgreSQL NOTIFYs the removed holder's client in the same statement
 * ({@link #FORCED_HELD}, {@link #FORCED_ENTRY}); its LISTEN connection hears it at once and the
 * lease turns invalid ({@code onLost}). On MariaDB and H2 the holder finds its grant gone at its
 * next renewal, every third of its lease time.
 *
 * <p>Concurrency: stateless but for the watches; each runs on a thread of its own and reads on the
 * backend's workers (PostgreSQL: its own LISTEN connection too).
 */
final class JdbcInspector implements LockInspector {
    private static final Logger log = LoggerFactory.getLogger(JdbcInspector.class);
    /** The LIKE escape character: neither a quote nor a backslash, which the dialects treat differently. */
    private static final char ESCAPE = '!';
    /**
     * How a NOTIFY that tells a client its exclusive grant was removed by force starts; {@code
     * <acquisition> <lock name>} follows. Never alike a wake-up ({@code H…} or an acquisition id).
     */
    static final String FORCED_HELD = "FX";

    /** As {@link #FORCED_HELD}, for a read-write or semaphore entry: {@code <acquisition> <row name>} follows. */
    static final String FORCED_ENTRY = "FE";

    /** The longest a PostgreSQL watch waits for a notification before it checks whether it was closed. */
    private static final long MAX_WAIT_MS = 500;

    private final JdbcBackend backend;
    private final JdbcDialect dialect;
    private final String now;
    private final String table;
    private final String waiters;
    private final Duration timeout;
    private final String readHeld;
    private final String readQueue;
    private final String readSessions;
    private final String releaseHeld;
    private final String releaseEntry;
    private final AtomicInteger watchThreads = new AtomicInteger();
    private final int snapshotIsolation;

    JdbcInspector(JdbcBackend backend) {
        this.backend = backend;
        this.dialect = backend.uri.dialect();
        this.now = dialect.now;
        this.table = backend.uri.table();
        this.waiters = backend.sql.waiters;
        this.timeout = backend.options.connectTimeout().multipliedBy(3);
        // H2's REPEATABLE READ fixes each table at its first read, not the whole database at the
        // first read as PostgreSQL's and InnoDB's do; its SERIALIZABLE does.
        this.snapshotIsolation = dialect == JdbcDialect.H2
                ? Connection.TRANSACTION_SERIALIZABLE
                : Connection.TRANSACTION_REPEATABLE_READ;
        String like = " LIKE ? ESCAPE '" + ESCAPE + "'";
        // Counter rows (rw/…, s/…, pg/…) never have an owner: every owned row is an exclusive lock.
        readHeld = "SELECT name, owner, client, token, holder, expires_ms - " + now + ", " + now + " FROM " + table
                + " WHERE owner IS NOT NULL AND expires_ms >= " + now + " AND name" + like;
        readQueue = "SELECT name, acquisition, client, kind, permits, max_permits, token, holder, expires_ms - " + now
                + " FROM " + waiters + " WHERE expires_ms >= " + now + " AND ((kind = 'X' AND token = 0 AND name"
                + like + ") OR (kind IN ('R', 'W') AND name" + like + ") OR (kind = 'S' AND name" + like
                + ")) ORDER BY name, seq";
        readSessions =
                "SELECT application_name FROM pg_stat_activity WHERE application_name LIKE 'dlock!_%' ESCAPE '!'";
        if (dialect == JdbcDialect.POSTGRESQL) {
            // The release's hand-over (JdbcStatements.handOver) with the token checked too: the first
            // live waiter becomes the owner with the next token and its client is notified.
            String nx = "SELECT w.acquisition, w.client, w.holder, w.lease_ms FROM " + waiters + " w WHERE w.name = ?"
                    + " AND w.kind = 'X' AND w.token = 0 AND w.expires_ms >= " + now + " AND w.acquisition <> ?"
                    + " ORDER BY w.seq LIMIT 1 FOR UPDATE";
            releaseHeld = "WITH nx AS (" + nx + "), u AS (UPDATE " + table
                    + " l SET owner = (SELECT acquisition FROM nx),"
                    + " client = (SELECT client FROM nx), token = l.token + (SELECT count(*) FROM nx),"
                    // The waiter's own lease time (this inspector's only for a row of an older version).
                    + " expires_ms = (SELECT " + now + " + COALESCE(lease_ms, ?) FROM nx),"
                    + " holder = (SELECT " + JdbcStatements.stamp(dialect, "split_part(holder, ' ', 1)")
                    + " FROM nx) WHERE l.name = ? AND l.owner = ? AND l.token = ?"
                    + " RETURNING l.name, l.token, l.owner, l.client),"
                    + " h AS (UPDATE " + waiters + " w SET token = u.token FROM u WHERE w.acquisition = u.owner),"
                    + " d AS (DELETE FROM " + waiters + " WHERE acquisition = ?)"
                    + " SELECT (SELECT count(pg_notify('dlock_' || v.client, 'H' || v.token || ' ' || v.owner))"
                    + " FROM u v WHERE v.owner IS NOT NULL),"
                    // The removed holder's client is told (the row as it was: the statement's snapshot).
                    + " (SELECT count(pg_notify('dlock_' || o.client, '" + FORCED_HELD
                    + "' || o.owner || ' ' || o.name))"
                    + " FROM " + table + " o WHERE o.name = u.name AND o.client IS NOT NULL) FROM u";
            // Tells the removed entry's client; wakes every waiting entry of the queue: each one's
            // own grant statement decides.
            releaseEntry = "WITH d AS (DELETE FROM " + waiters + " WHERE name = ? AND acquisition = ? AND token = ?"
                    + " AND token > 0 RETURNING name, client, acquisition) SELECT (SELECT count(pg_notify('dlock_'"
                    + " || w.client, w.acquisition)) FROM " + waiters
                    + " w WHERE w.name = d.name AND w.token = 0 AND w.expires_ms >= "
                    + now + "), (SELECT count(pg_notify('dlock_' || d.client, '" + FORCED_ENTRY
                    + "' || d.acquisition || ' ' || d.name)) WHERE d.client IS NOT NULL) FROM d";
        } else {
            // The waiters' one poller per client finds the row free at its next poll.
            releaseHeld = "UPDATE " + table + " SET owner = NULL, client = NULL, expires_ms = NULL, holder = NULL"
                    + " WHERE name = ? AND owner = ? AND token = ?";
            releaseEntry = "DELETE FROM " + waiters + " WHERE name = ? AND acquisition = ? AND token = ? AND token > 0";
        }
    }

    /** {@code s} as a LIKE pattern that matches it literally, followed by anything. */
    static String likePrefix(String s) {
        StringBuilder b = new StringBuilder(s.length() + 1);
        for (char c : s.toCharArray()) {
            if (c == '%' || c == '_' || c == ESCAPE) {
                b.append(ESCAPE);
            }
            b.append(c);
        }
        return b.append('%').toString();
    }

    @Override
    public List<LockSnapshot> inspect(String namePrefix) {
        Objects.requireNonNull(namePrefix, "namePrefix");
        return read(namePrefix, null);
    }

    /** Every lock starting with {@code prefix}; only lock {@code exactName}'s if not null. */
    private List<LockSnapshot> read(String prefix, @Nullable String exactName) {
        record Key(String name, LockKind kind) {}
        TreeMap<Key, List<EntrySnapshot>> holders =
                new TreeMap<>(Comparator.comparing(Key::name).thenComparing(Key::kind));
        TreeMap<Key, List<EntrySnapshot>> queued = new TreeMap<>(holders.comparator());
        TreeMap<Key, Integer> maxPermits = new TreeMap<>(holders.comparator());
        String pattern = likePrefix(prefix);
        Set<String> sessions = java.util.concurrent.ConcurrentHashMap.newKeySet();
        Set<String> owners = new java.util.HashSet<>();
        await(
                // One snapshot for both tables: read apart, a hand-over committed between the reads
                // showed the old holder with its waiter gone.
                backend.submit(c -> backend.inTransaction(c, snapshotIsolation, () -> {
                    try (PreparedStatement ps = c.prepareStatement(readHeld)) {
                        ps.setString(1, pattern);
                        try (ResultSet rs = ps.executeQuery()) {
                            while (rs.next()) {
                                String name = rs.getString(1);
                                if (exactName != null && !exactName.equals(name)) {
                                    continue;
                                }
                                long token = rs.getLong(4);
                                owners.add(name + "#" + rs.getString(2));
                                holders.computeIfAbsent(new Key(name, LockKind.EXCLUSIVE), k -> new ArrayList<>())
                                        .add(entry(
                                                name + "#" + rs.getString(2) + "#" + token,
                                                LockMode.EXCLUSIVE,
                                                1,
                                                rs.getString(3),
                                                rs.getString(5),
                                                token,
                                                rs.getLong(6)));
                            }
                        }
                    }
                    try (PreparedStatement ps = c.prepareStatement(readQueue)) {
                        ps.setString(1, pattern);
                        ps.setString(2, "rw/" + pattern);
                        ps.setString(3, "s/" + pattern);
                        try (ResultSet rs = ps.executeQuery()) {
                            while (rs.next()) {
                                String row = rs.getString(1);
                                char kindChar = rs.getString(4).charAt(0);
                                LockMode mode =
                                        switch (kindChar) {
                                            case 'R' -> LockMode.READ;
                                            case 'W' -> LockMode.WRITE;
                                            case 'S' -> LockMode.SEMAPHORE;
                                            default -> LockMode.EXCLUSIVE;
                                        };
                                LockKind kind =
                                        switch (mode) {
                                            case READ, WRITE -> LockKind.READ_WRITE;
                                            case SEMAPHORE -> LockKind.SEMAPHORE;
                                            case EXCLUSIVE -> LockKind.EXCLUSIVE;
                                        };
                                String name = mode == LockMode.EXCLUSIVE ? row : row.substring(row.indexOf('/') + 1);
                                if (exactName != null && !exactName.equals(name)) {
                                    continue;
                                }
                                if (mode == LockMode.EXCLUSIVE && owners.contains(row + "#" + rs.getString(2))) {
                                    // A waiter that polled its way to the grant deletes its row in a
                                    // statement of its own: until then that row is the holder's.
                                    continue;
                                }
                                long token = rs.getLong(7);
                                Key key = new Key(name, kind);
                                if (kind == LockKind.SEMAPHORE) {
                                    maxPermits.merge(key, rs.getInt(6), Math::max);
                                }
                                (token > 0 ? holders : queued)
                                        .computeIfAbsent(key, k -> new ArrayList<>())
                                        .add(entry(
                                                row + "#" + rs.getString(2) + "#" + token,
                                                mode,
                                                rs.getInt(5),
                                                rs.getString(3),
                                                rs.getString(8),
                                                token,
                                                rs.getLong(9)));
                            }
                        }
                    }
                    if (dialect == JdbcDialect.POSTGRESQL) {
                        // After the rows: a client seen in a row had its LISTEN session before it.
                        try (PreparedStatement ps = c.prepareStatement(readSessions);
                                ResultSet rs = ps.executeQuery()) {
                            while (rs.next()) {
                                sessions.add(rs.getString(1));
                            }
                        }
                    }
                    return Boolean.TRUE;
                })),
                exactName);
        if (dialect == JdbcDialect.POSTGRESQL) {
            holders.replaceAll((k, list) -> withLiveness(list, sessions));
            queued.replaceAll((k, list) -> withLiveness(list, sessions));
        }
        Set<Key> keys = new java.util.TreeSet<>(holders.comparator());
        keys.addAll(holders.keySet());
        keys.addAll(queued.keySet());
        List<LockSnapshot> out = new ArrayList<>();
        for (Key k : keys) {
            int max = k.kind() == LockKind.SEMAPHORE ? maxPermits.getOrDefault(k, 0) : 1;
            out.add(new LockSnapshot(
                    k.name(), k.kind(), max, holders.getOrDefault(k, List.of()), queued.getOrDefault(k, List.of())));
        }
        return out;
    }

    /**
     * PostgreSQL: marks an entry's client connected if its LISTEN session (application_name {@code
     * dlock_<client>}) is open. Only rows this version wrote (with a time in the holder column):
     * an earlier version's client has no such session however alive it is, so it stays unknown.
     */
    private static List<EntrySnapshot> withLiveness(List<EntrySnapshot> entries, Set<String> sessions) {
        List<EntrySnapshot> out = new ArrayList<>(entries.size());
        for (EntrySnapshot e : entries) {
            String client = e.clientId();
            Boolean connected =
                    client == null || e.since() == null ? null : sessions.contains(PgListener.applicationName(client));
            out.add(new EntrySnapshot(
                    e.key(),
                    e.mode(),
                    e.permits(),
                    client,
                    e.host(),
                    e.pid(),
                    connected,
                    e.backendToken(),
                    e.since(),
                    e.leaseLeft()));
        }
        return out;
    }

    /** An entry from its row; {@code holder} is {@code pid@host <ms>}, {@code pid@host} or null (older rows). */
    static EntrySnapshot entry(
            String key,
            LockMode mode,
            int permits,
            @Nullable String client,
            @Nullable String holder,
            long token,
            long leftMs) {
        String host = null;
        long pid = -1;
        Instant since = null;
        if (holder != null) {
            String who = holder;
            int space = holder.lastIndexOf(' ');
            if (space > 0) {
                who = holder.substring(0, space);
                try {
                    since = Instant.ofEpochMilli(Long.parseLong(holder.substring(space + 1)));
                } catch (NumberFormatException e) {
                    who = holder; // not a time: a host name with a space is not ours to split
                }
            }
            int at = who.indexOf('@');
            if (at > 0) {
                try {
                    pid = Long.parseLong(who.substring(0, at));
                    host = who.substring(at + 1);
                } catch (NumberFormatException e) {
                    host = who;
                }
            } else {
                host = who.isEmpty() ? null : who;
            }
        }
        return new EntrySnapshot(
                key, mode, permits, client, host, pid, null, token, since, Duration.ofMillis(Math.max(0, leftMs)));
    }

    @Override
    public ForcedReleaseNotice forcedReleaseNotice() {
        return dialect == JdbcDialect.POSTGRESQL ? ForcedReleaseNotice.AT_ONCE : ForcedReleaseNotice.NEXT_RENEWAL;
    }

    @Override
    public List<String> forceRelease(String name, Collection<String> keys) {
        Objects.requireNonNull(name, "name");
        if (name.isEmpty()) {
            throw new IllegalArgumentException("a lock name is required");
        }
        record Target(String key, String row, String acquisition, long token) {}
        List<Target> targets = new ArrayList<>();
        for (String key : new LinkedHashSet<>(keys)) {
            int last = key.lastIndexOf('#');
            int mid = last <= 0 ? -1 : key.lastIndexOf('#', last - 1);
            String row = mid <= 0 ? "" : key.substring(0, mid);
            long token = -1;
            if (mid > 0) {
                try {
                    token = Long.parseLong(key.substring(last + 1));
                } catch (NumberFormatException e) {
                    token = -1;
                }
            }
            if (token < 0
                    || !(row.equals(name) || row.equals("rw/" + name) || row.equals("s/" + name))
                    || mid + 1 >= last) {
                throw new IllegalArgumentException("'" + key + "' is no entry of lock '" + name + "'");
            }
            targets.add(new Target(key, row, key.substring(mid + 1, last), token));
        }
        List<String> removed = new ArrayList<>();
        for (Target t : targets) {
            if (t.token() == 0) {
                continue; // a waiter: nothing granted to remove
            }
            boolean exclusive = t.row().equals(name);
            Boolean done = await(
                    backend.submit(c -> {
                        try (PreparedStatement ps = c.prepareStatement(exclusive ? releaseHeld : releaseEntry)) {
                            int i = 1;
                            if (exclusive && dialect == JdbcDialect.POSTGRESQL) {
                                ps.setString(i++, name);
                                ps.setString(i++, t.acquisition());
                                ps.setLong(i++, backend.options.leaseTime().toMillis());
                            }
                            ps.setString(i++, t.row());
                            ps.setString(i++, t.acquisition());
                            ps.setLong(i++, t.token());
                            if (exclusive && dialect == JdbcDialect.POSTGRESQL) {
                                ps.setString(i, t.acquisition());
                            }
                            if (dialect == JdbcDialect.POSTGRESQL) {
                                try (ResultSet rs = ps.executeQuery()) {
                                    return rs.next();
                                }
                            }
                            return ps.executeUpdate() == 1;
                        }
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
        Watcher w = new Watcher(name, Math.max(1, pollInterval.toMillis()), listener, onError);
        Thread t = new Thread(w::run, "dlock-jdbc-watch-" + watchThreads.incrementAndGet());
        t.setDaemon(true);
        w.thread = t;
        t.start();
        return w;
    }

    /**
     * One watch: reads the lock every interval and, on PostgreSQL, also at once when a client of
     * the lock's holders and waiters is notified (its LISTEN connection listens on their channels,
     * so it hears every hand-over and wake-up of the queue; a grant or release with nobody waiting
     * notifies nobody and is seen at the next interval).
     */
    private final class Watcher implements Watch {
        private final String name;
        private final long intervalMs;
        private final Consumer<List<LockSnapshot>> listener;
        private final Consumer<Throwable> onError;
        private final AtomicBoolean closed = new AtomicBoolean();
        private final Object sleep = new Object();
        volatile @Nullable Thread thread;
        // The watch thread's alone.
        private @Nullable List<String> last;
        private @Nullable Connection listen;
        private final Set<String> channels = new LinkedHashSet<>();

        Watcher(String name, long intervalMs, Consumer<List<LockSnapshot>> listener, Consumer<Throwable> onError) {
            this.name = name;
            this.intervalMs = intervalMs;
            this.listener = listener;
            this.onError = onError;
        }

        void run() {
            try {
                long nextRead = 0;
                while (!closed.get()) {
                    long nowMs = System.nanoTime() / 1_000_000;
                    boolean woken = false;
                    if (nowMs >= nextRead) {
                        readOnce();
                        nextRead = System.nanoTime() / 1_000_000 + intervalMs;
                    } else {
                        woken = waitFor(Math.min(MAX_WAIT_MS, nextRead - nowMs));
                    }
                    if (woken) {
                        nextRead = 0;
                    }
                }
            } finally {
                closeListen();
            }
        }

        private void readOnce() {
            try {
                List<LockSnapshot> snapshot = read(name, name);
                if (dialect == JdbcDialect.POSTGRESQL) {
                    follow(snapshot);
                }
                List<String> signature = signature(snapshot);
                if (!signature.equals(last) && !closed.get()) {
                    last = signature;
                    listener.accept(snapshot);
                }
            } catch (RuntimeException e) {
                if (!closed.get()) {
                    onError.accept(e);
                }
            }
        }

        /** LISTENs on the channel of every client in the snapshot (PostgreSQL). */
        private void follow(List<LockSnapshot> snapshot) {
            Set<String> wanted = new LinkedHashSet<>();
            for (LockSnapshot l : snapshot) {
                for (EntrySnapshot e : l.holders()) {
                    addChannel(wanted, e.clientId());
                }
                for (EntrySnapshot e : l.waiters()) {
                    addChannel(wanted, e.clientId());
                }
            }
            try {
                Connection c = listen;
                if (c == null) {
                    c = backend.dedicatedConnection();
                    listen = c;
                    channels.clear();
                }
                try (Statement s = c.createStatement()) {
                    for (String ch : wanted) {
                        if (channels.add(ch)) {
                            s.execute("LISTEN " + ch);
                        }
                    }
                    for (String ch : List.copyOf(channels)) {
                        if (!wanted.contains(ch)) {
                            s.execute("UNLISTEN " + ch);
                            channels.remove(ch);
                        }
                    }
                }
            } catch (SQLException e) {
                log.debug("[lock={}] watch's LISTEN failed, polling only: {}", name, backend.message(e));
                closeListen();
            }
        }

        /** Waits up to {@code ms}; true if a notification came (PostgreSQL). */
        private boolean waitFor(long ms) {
            Connection c = listen;
            if (c != null) {
                try {
                    PGNotification[] notes = c.unwrap(PGConnection.class).getNotifications((int) Math.max(1, ms));
                    return notes != null && notes.length > 0;
                } catch (SQLException e) {
                    log.debug("[lock={}] watch's LISTEN connection failed: {}", name, backend.message(e));
                    closeListen();
                    return false;
                }
            }
            synchronized (sleep) {
                if (!closed.get()) {
                    try {
                        sleep.wait(ms); // woken early by close()
                    } catch (InterruptedException e) {
                        closed.set(true);
                    }
                }
            }
            return false;
        }

        private void closeListen() {
            Connection c = listen;
            listen = null;
            channels.clear();
            if (c != null) {
                backend.closeDedicated(c);
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

    /** The channel of a client id, if it is one of ours (32 hex digits: safe to put in LISTEN). */
    private static void addChannel(Set<String> out, @Nullable String clientId) {
        if (clientId != null && clientId.matches("[0-9a-f]{32}")) {
            out.add("dlock_" + clientId);
        }
    }

    /** What a change is: entries and their grants, not the lease time ticking down. */
    static List<String> signature(List<LockSnapshot> locks) {
        List<String> out = new ArrayList<>();
        for (LockSnapshot l : locks) {
            for (EntrySnapshot e : l.holders()) {
                out.add("H " + e.key());
            }
            for (EntrySnapshot e : l.waiters()) {
                out.add("W " + e.key());
            }
        }
        return out;
    }

    private <T> T await(java.util.concurrent.CompletableFuture<T> f, @Nullable String lockName) {
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
