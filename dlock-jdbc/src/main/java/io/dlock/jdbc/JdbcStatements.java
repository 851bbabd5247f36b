package io.dlock.jdbc;

import java.util.List;
import org.jspecify.annotations.Nullable;

/**
 * The SQL text for one lock table, as constants built once per client. Table names are validated
 * identifiers ({@link JdbcUri#TABLE}); every value is a bind parameter.
 *
 * <p>Why each step is safe as one autocommit statement:
 *
 * <ul>
 *   <li><b>Grant</b> changes the lock's row only if it is free or its expiry (database clock) has
 *       passed, and, when fair, only if no live waiter stands ahead of the requester; the row lock
 *       the statement takes makes two grants of the same row serialize, and the second sees the
 *       first's owner and takes nothing. The token is incremented by the same statement, so it is
 *       bound to exactly this grant. PostgreSQL: {@code INSERT … ON CONFLICT DO UPDATE … WHERE …
 *       RETURNING}; MariaDB/MySQL and H2: a conditional {@code UPDATE} (after a one-time insert of
 *       the row with token 0), whose token comes back through {@code LAST_INSERT_ID(expr)} or
 *       {@code FINAL TABLE}.
 *   <li><b>Renew</b> extends the expiry only where owner and token are still this grant's.
 *   <li><b>Release</b> clears the owner only where it is still this acquisition's; the row and its
 *       token stay, so the next grant is higher. On PostgreSQL the same statement sends {@code
 *       NOTIFY} to the client of the first live waiter only (no herd).
 * </ul>
 */
final class JdbcStatements {
    final JdbcDialect dialect;
    final String table;
    final String waiters;

    /**
     * Params: PostgreSQL name, owner, client, leaseMs, holder, seqBound; H2 owner, client, leaseMs,
     * holder, name, name, seqBound; MariaDB/MySQL owner, client, leaseMs, holder, owner, name, name,
     * seqBound. Returns the token, or no row. On MariaDB/MySQL it also sets the row's {@code queued}
     * flag to whether a live waiter other than the new owner is left.
     */
    final String grant;
    /**
     * MariaDB/MySQL only: the grant of an acquisition with no waiter row, without reading the
     * waiters table. Params: owner, client, leaseMs, holder, name, most queued (0: fair, 1: not).
     * Returns no row where {@link #grant} could still grant (a stale {@code queued} flag): a fair
     * caller then tries that.
     *
     * <p>Why: MariaDB pays for the fair grant's {@code NOT EXISTS} on the waiters table (about 60 us
     * of the database's time per cycle, measured) even when no one waits, and an {@code OR} in
     * front of it does not spare it. The flag answers "no one waits" from the lock's own row. It is
     * set by every waiter right after its row is committed ({@link #markQueued}) and cleared only
     * by a grant, under the lock row's lock, that reads no live waiter other than the grantee: so
     * from the moment a waiter's mark commits until its row goes, the flag is 1, and a newcomer
     * that finds it 0 was first (its grant serializes before the mark on the row lock).
     */
    final @Nullable String grantFree;
    /** MariaDB/MySQL only. Params: name. Sets the lock row's {@code queued} flag: a waiter row stands. */
    final @Nullable String markQueued;
    /** H2/MariaDB: params name; creates the row with token 0 if absent. */
    final @Nullable String ensureRow;
    /** Params: leaseMs, name, owner, token. Update count 1 = renewed. */
    final String renew;
    /** Params: name, owner (PostgreSQL: and owner again). PostgreSQL: a query (the NOTIFY); elsewhere an update. */
    final String release;
    /**
     * PostgreSQL only. Params: name, owner, leaseMs, name, owner, owner. Releases and, in the same
     * statement, makes the first live waiter the owner with the next token and a lease of that
     * waiter's own {@code lease_ms} ({@code leaseMs}, the releaser's, only for a row an older
     * version wrote without it); the NOTIFY payload {@code H<token> <acquisition> <lease ms>} tells
     * its client so. No rows: released without a hand-over.
     */
    final @Nullable String handOver;
    /**
     * PostgreSQL only. Params: name, owner, name, owner. Releases only if no waiter row of the lock
     * is live and the releaser has no row of its own left (handed over or not): then there is no one
     * to hand over to or to wake, and the plain update costs what the floor's release does. Update
     * count 0: not released (someone waits, or the row is no longer the releaser's); {@link
     * #handOver} decides then.
     */
    final @Nullable String releaseAlone;
    /** Params: name, acquisition, client, waiterMs, holder, leaseMs (the waiter's own). Generated key: seq. */
    final String insertWaiter;
    /** Params: name. Removes expired waiters of one lock. */
    final String purgeWaiters;
    /** Params: acquisition. */
    final String deleteWaiter;
    /** Params: waiterMs, client. */
    final String heartbeat;
    /**
     * Params: client. Rows: acquisition, seq, owner, remaining ms of the holder's lease, the waiter
     * row's token (above 0: handed over), the lock's token.
     */
    final String status;
    /** Params: client. */
    final String deleteClientWaiters;
    /** Params: name, owner. Rows: token. */
    final String findHeld;
    /** Params: name, owner. Rows: token, remaining ms of the lease. */
    final String findHanded;
    /** Params: acquisition. Rows: seq. */
    final String findWaiter;
    /** Params: acquisition. Turns a handed-over exclusive waiter row back into a waiting one. */
    final String rewait;
    /** Params: acquisition. Rows: name, kind, token. */
    final String findEntry;
    /** Checks that both tables exist, with every column (no rows). */
    final String probe;

    // ---- read-write locks and semaphores (kinds R, W, S): see SharedQueue

    /** Params: name. Rows: token. Locks the name's counter row until commit. */
    final String lockCounter;
    /** Params: name. Creates the counter row with token 0 if absent; never fails on a race. */
    final String ensureCounter;
    /** Params: token, name. */
    final String setCounter;
    /** Params: name. Rows: acquisition, client, kind, permits, max_permits, token, seq, remaining ms; by seq. */
    final String queue;
    /** Params: name, acquisition, client, ms, kind, permits, max_permits, token, holder. Generated key: seq. */
    final String insertEntry;
    /** Params: token, leaseMs, holder, acquisition. */
    final String grantEntry;
    /** Params: leaseMs, acquisition, token. Update count 1 = renewed. */
    final String renewEntry;
    /** Params: client. Rows as {@link #queue}, with the name first, of every name this client waits on. */
    final String sharedStatus;
    /** PostgreSQL only. Params: channel, payload. */
    final @Nullable String notify;
    /**
     * MariaDB/MySQL only ({@link MariaDbDoorbell}). Params: name, seq, name. Rows: one, the
     * acquisition whose bell a waiter of that seq waits on (the live waiter just ahead of it, else
     * the owner of an unexpired lease; null: nobody, try now) and whether that bell is in use
     * (null: no one holds it). A plain read: it takes no row lock.
     */
    final @Nullable String bellPredecessor;

    JdbcStatements(JdbcDialect dialect, String table) {
        this.dialect = dialect;
        this.table = table;
        this.waiters = table + "_waiters";
        String now = dialect.now;
        // token = 0: a waiter row the release marked as handed over (token > 0) belongs to the owner now.
        String ahead = "NOT EXISTS (SELECT 1 FROM " + waiters
                + " w WHERE w.name = ? AND w.seq < ? AND w.token = 0 AND w.expires_ms >= " + now + ")";
        String free = "(l.owner IS NULL OR l.expires_ms < " + now + ")";
        switch (dialect) {
            case POSTGRESQL -> {
                grant = "INSERT INTO " + table + " AS l (name, owner, client, token, expires_ms, holder)"
                        + " VALUES (?, ?, ?, 1, " + now + " + ?, " + stamp(dialect, "?") + ")"
                        + " ON CONFLICT (name) DO UPDATE SET owner = EXCLUDED.owner, client = EXCLUDED.client,"
                        + " token = l.token + 1, expires_ms = EXCLUDED.expires_ms, holder = EXCLUDED.holder"
                        + " WHERE " + free + " AND " + ahead.replace("w.name = ?", "w.name = EXCLUDED.name")
                        + " RETURNING l.token";
                ensureRow = null;
                grantFree = null;
                markQueued = null;
                releaseAlone = "UPDATE " + table + " SET owner = NULL, client = NULL, expires_ms = NULL,"
                        + " holder = NULL WHERE name = ? AND owner = ? AND NOT EXISTS (SELECT 1 FROM " + waiters
                        + " w WHERE w.name = ? AND ((w.token = 0 AND w.expires_ms >= " + now
                        + ") OR w.acquisition = ?))";
                release = "WITH r AS (UPDATE " + table + " SET owner = NULL, client = NULL, expires_ms = NULL,"
                        + " holder = NULL WHERE name = ? AND owner = ? RETURNING name),"
                        + " d AS (DELETE FROM " + waiters + " WHERE acquisition = ?)"
                        + " SELECT pg_notify('dlock_' || w.client, w.acquisition) FROM " + waiters + " w"
                        + " WHERE w.name = (SELECT name FROM r) AND w.token = 0 AND w.expires_ms >= " + now
                        + " ORDER BY w.seq LIMIT 1";
                // See JdbcLockProtocol's "Hand-over" for why this is safe. nx locks the first live
                // waiter's row (FOR UPDATE: a withdrawal that deleted it first makes it skip to the
                // next; one that deletes it later waits for this commit and then finds itself owner).
                handOver = "WITH nx AS (SELECT w.acquisition, w.client, w.holder, w.lease_ms FROM " + waiters
                        + " w WHERE w.name = ?"
                        + " AND w.kind = 'X' AND w.token = 0 AND w.expires_ms >= " + now + " AND w.acquisition <> ?"
                        + " ORDER BY w.seq LIMIT 1 FOR UPDATE),"
                        + " u AS (UPDATE " + table + " l SET owner = (SELECT acquisition FROM nx),"
                        + " client = (SELECT client FROM nx), token = l.token + (SELECT count(*) FROM nx),"
                        // The new owner's own lease: a waiter with a shorter leaseTime than the
                        // releaser's must not, if its client dies now, block the lock for the longer one.
                        + " expires_ms = (SELECT " + now + " + COALESCE(lease_ms, ?) FROM nx),"
                        + " holder = (SELECT " + stamp(dialect, "split_part(holder, ' ', 1)") + " FROM nx)"
                        + " WHERE l.name = ? AND l.owner = ? RETURNING l.token, l.owner, l.client,"
                        + " l.expires_ms - " + now + " AS ms),"
                        + " h AS (UPDATE " + waiters + " w SET token = u.token FROM u WHERE w.acquisition = u.owner),"
                        + " d AS (DELETE FROM " + waiters + " WHERE acquisition = ?)"
                        // The payload carries the lease the grant was given (the waiter's own leaseTime):
                        // the waiter counts it from a moment it knows to precede the grant
                        // (JdbcLockProtocol.Waiter#handedOver), so it needs no read of the row.
                        + " SELECT pg_notify('dlock_' || u.client, 'H' || u.token || ' ' || u.owner || ' ' || u.ms)"
                        + " FROM u WHERE u.owner IS NOT NULL";
            }
            case MARIADB -> {
                String set = "UPDATE " + table + " l SET l.owner = ?, l.client = ?,"
                        + " l.token = LAST_INSERT_ID(l.token + 1), l.expires_ms = " + now + " + ?, l.holder = "
                        + stamp(dialect, "?");
                // Correlated (w.name = l.name), so it is read after the row lock is held: a waiter's
                // mark that committed before it is seen with that waiter's row.
                grant = set + ", l.queued = EXISTS (SELECT 1 FROM " + waiters + " w WHERE w.name = l.name"
                        + " AND w.token = 0 AND w.expires_ms >= " + now + " AND w.acquisition <> ?)"
                        + " WHERE l.name = ? AND " + free + " AND " + ahead;
                grantFree = set + " WHERE l.name = ? AND " + free + " AND l.queued <= ?";
                markQueued = "UPDATE " + table + " SET queued = 1 WHERE name = ? AND queued = 0";
                ensureRow = "INSERT IGNORE INTO " + table + " (name, token) VALUES (?, 0)";
                release = plainRelease(table);
                releaseAlone = null;
                handOver = null;
            }
            case H2 -> {
                grant = "SELECT token FROM FINAL TABLE (UPDATE " + table + " l SET owner = ?, client = ?,"
                        + " token = token + 1, expires_ms = " + now + " + ?, holder = " + stamp(dialect, "?")
                        + " WHERE l.name = ? AND "
                        + free + " AND " + ahead + ")";
                ensureRow = h2EnsureRow(table);
                grantFree = null;
                markQueued = null;
                release = plainRelease(table);
                releaseAlone = null;
                handOver = null;
            }
            default -> throw new AssertionError(dialect);
        }
        renew = "UPDATE " + table + " SET expires_ms = " + now + " + ? WHERE name = ? AND owner = ? AND token = ?";
        insertWaiter = "INSERT INTO " + waiters
                + " (name, acquisition, client, expires_ms, holder, lease_ms) VALUES (?, ?, ?, " + now + " + ?, "
                + stamp(dialect, "?") + ", ?)";
        purgeWaiters = "DELETE FROM " + waiters + " WHERE name = ? AND expires_ms < " + now;
        deleteWaiter = "DELETE FROM " + waiters + " WHERE acquisition = ?";
        // Only waiting entries: a held read-write or semaphore entry is renewed by its own grant's renewal.
        heartbeat = "UPDATE " + waiters + " SET expires_ms = " + now + " + ? WHERE client = ? AND token = 0";
        status = "SELECT w.acquisition, w.seq, l.owner, l.expires_ms - " + now + ", w.token, l.token FROM " + waiters
                + " w LEFT JOIN "
                + table + " l ON l.name = w.name WHERE w.client = ? AND w.kind = 'X'";
        deleteClientWaiters = "DELETE FROM " + waiters + " WHERE client = ?";
        findHeld = "SELECT token FROM " + table + " WHERE name = ? AND owner = ?";
        findHanded = "SELECT token, expires_ms - " + now + " FROM " + table + " WHERE name = ? AND owner = ?";
        findWaiter = "SELECT seq FROM " + waiters + " WHERE acquisition = ?";
        rewait = "UPDATE " + waiters + " SET token = 0 WHERE acquisition = ? AND kind = 'X'";
        findEntry = "SELECT name, kind, token FROM " + waiters + " WHERE acquisition = ?";
        probe = "SELECT l.name, l.owner, l.client, l.token, l.expires_ms, l.holder,"
                + (dialect == JdbcDialect.MARIADB ? " l.queued," : "") + " w.seq, w.name, w.acquisition,"
                + " w.client, w.expires_ms, w.kind, w.permits, w.max_permits, w.token, w.holder, w.lease_ms FROM "
                + table
                + " l, "
                + waiters
                + " w WHERE 1 = 0";

        lockCounter = "SELECT token FROM " + table + " WHERE name = ? FOR UPDATE";
        ensureCounter = switch (dialect) {
            case POSTGRESQL -> "INSERT INTO " + table + " (name, token) VALUES (?, 0) ON CONFLICT (name) DO NOTHING";
            case MARIADB -> "INSERT IGNORE INTO " + table + " (name, token) VALUES (?, 0)";
            case H2 -> h2EnsureRow(table);
        };
        setCounter = "UPDATE " + table + " SET token = ? WHERE name = ?";
        String columns = "acquisition, client, kind, permits, max_permits, token, seq, expires_ms - " + now;
        queue = "SELECT " + columns + " FROM " + waiters + " WHERE name = ? ORDER BY seq";
        insertEntry = "INSERT INTO " + waiters
                + " (name, acquisition, client, expires_ms, kind, permits, max_permits, token, holder) VALUES (?, ?, ?, "
                + now + " + ?, ?, ?, ?, ?, " + stamp(dialect, "?") + ")";
        grantEntry = "UPDATE " + waiters + " SET token = ?, expires_ms = " + now + " + ?, holder = "
                + stamp(dialect, "?") + " WHERE acquisition = ?";
        renewEntry = "UPDATE " + waiters + " SET expires_ms = " + now + " + ? WHERE acquisition = ? AND token = ?";
        sharedStatus =
                "SELECT q.name, q.acquisition, q.client, q.kind, q.permits, q.max_permits, q.token, q.seq, q.expires_ms - "
                        + now + " FROM " + waiters + " q WHERE q.name IN (SELECT w.name FROM " + waiters
                        + " w WHERE w.client = ? AND w.token = 0 AND w.kind <> 'X') ORDER BY q.name, q.seq";
        notify = dialect == JdbcDialect.POSTGRESQL ? "SELECT pg_notify(?, ?)" : null;
        bellPredecessor = dialect == JdbcDialect.MARIADB
                ? "SELECT x.p, IS_USED_LOCK(CONCAT('" + MariaDbDoorbell.PREFIX + "', x.p)) FROM (SELECT COALESCE("
                        + "(SELECT w.acquisition FROM " + waiters + " w WHERE w.name = ? AND w.kind = 'X'"
                        + " AND w.token = 0 AND w.seq < ? AND w.expires_ms >= " + now
                        + " ORDER BY w.seq DESC LIMIT 1),"
                        + " (SELECT l.owner FROM " + table + " l WHERE l.name = ? AND l.expires_ms >= " + now
                        + ")) AS p) x"
                : null;
    }

    /**
     * The holder column's value: {@code pid@host} (the expression {@code who}), a space and the
     * database clock's epoch milliseconds when the row was granted (the lock table) or written (a
     * queue entry: its enqueue, then its grant). Rows written by earlier versions hold {@code pid@host}
     * alone, or NULL; {@link JdbcInspector} reads both.
     */
    static String stamp(JdbcDialect dialect, String who) {
        return switch (dialect) {
            case POSTGRESQL -> "(CAST(" + who + " AS VARCHAR) || ' ' || " + dialect.now + ")";
            case MARIADB -> "CONCAT(" + who + ", ' ', " + dialect.now + ")";
            case H2 -> "CONCAT(CAST(" + who + " AS VARCHAR(255)), ' ', " + dialect.now + ")";
        };
    }

    /**
     * The statements that add the columns added after the first release (the waiters table's {@code
     * holder}, then {@code lease_ms}; on MariaDB/MySQL the lock table's {@code queued}); run only
     * when the probe found a column missing, each may fail on a column that is already there.
     */
    List<String> addColumns() {
        List<String> alters = new java.util.ArrayList<>(List.of(
                "ALTER TABLE " + waiters + " ADD COLUMN holder VARCHAR(255)",
                "ALTER TABLE " + waiters + " ADD COLUMN lease_ms BIGINT"));
        if (dialect == JdbcDialect.MARIADB) {
            alters.add("ALTER TABLE " + table + " ADD COLUMN queued TINYINT NOT NULL DEFAULT 0");
        }
        return List.copyOf(alters);
    }

    private static String h2EnsureRow(String table) {
        return "INSERT INTO " + table + " (name, token) SELECT CAST(? AS VARCHAR(255)), 0"
                + " WHERE NOT EXISTS (SELECT 1 FROM " + table + " WHERE name = ?)";
    }

    private static String plainRelease(String table) {
        return "UPDATE " + table + " SET owner = NULL, client = NULL, expires_ms = NULL, holder = NULL"
                + " WHERE name = ? AND owner = ?";
    }
}
