package io.dlock.jdbc;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Objects;

/**
 * Makes the database itself refuse a former lock holder's late write to the application's own
 * tables. Inside the transaction that does the write, one call records the lease's fencing token
 * for the resource in a guard row and fails if a higher token is already recorded; the guard row
 * stays locked until the transaction ends, so two writers of one resource are ordered by their
 * tokens, never interleaved.
 *
 * <pre>{@code
 * FencedWrites fence = FencedWrites.of("dlock_fence");
 * try (Lease lease = locks.lock("stock-42").acquire()) {
 *     // ... a long GC pause here: the lease may have passed to another process ...
 *     try (Connection c = pool.getConnection()) {
 *         c.setAutoCommit(false);
 *         fence.check(c, "stock-42", lease.fencingToken());   // StaleTokenException if superseded
 *         try (PreparedStatement ps = c.prepareStatement("UPDATE stock SET qty = qty - 1 WHERE id = 42")) {
 *             ps.executeUpdate();
 *         }
 *         c.commit();
 *     }
 * }
 * }</pre>
 *
 * <p>The guard table (one row per resource) is {@code CREATE TABLE dlock_fence (resource
 * VARCHAR(255) PRIMARY KEY, token BIGINT NOT NULL)}; {@link #createTable(Connection)} creates it.
 *
 * <p>Thread-safety: immutable; safe from any thread (each call uses only the caller's connection).
 */
public final class FencedWrites {
    /** The default guard table. */
    public static final String DEFAULT_TABLE = "dlock_fence";

    private final String table;

    private FencedWrites(String table) {
        this.table = table;
    }

    /**
     * A helper over guard table {@code table}.
     *
     * <p>Blocking: never. Thread-safety: safe. On failure: {@link IllegalArgumentException} for a
     * name that is not an unquoted identifier, optionally schema-qualified.
     *
     * @param table the guard table
     * @return the helper
     * @throws IllegalArgumentException if the name is not valid
     */
    public static FencedWrites of(String table) {
        JdbcUri.checkTable(table);
        return new FencedWrites(table);
    }

    /**
     * Creates the guard table if it does not exist, in autocommit.
     *
     * <p>Blocking: one statement. Thread-safety: safe. On failure: the {@link SQLException}.
     *
     * @param connection a connection in autocommit
     * @throws SQLException if the statement fails
     */
    public void createTable(Connection connection) throws SQLException {
        try (Statement s = connection.createStatement()) {
            s.execute("CREATE TABLE IF NOT EXISTS " + table + " (resource VARCHAR(255) PRIMARY KEY,"
                    + " token BIGINT NOT NULL)");
        }
    }

    /**
     * Records {@code token} as the latest for {@code resource} in the caller's transaction, or
     * refuses because a higher token was recorded. The same token may be recorded again (a holder
     * writing twice).
     *
     * <p>Blocking: one or two statements; waits for the guard row while another transaction holds
     * it. Thread-safety: as the connection. On failure: {@link StaleTokenException} if a higher token
     * is recorded (roll back: nothing this transaction wrote may stand); {@link SQLException} for a
     * database error; {@link IllegalStateException} in autocommit (the guard would protect nothing).
     * The transaction is left to the caller either way.
     *
     * @param transaction the connection whose transaction writes the resource (autocommit off)
     * @param resource what the write changes, at most 255 characters
     * @param token the lease's {@link io.dlock.Lease#fencingToken()}
     * @throws StaleTokenException if a higher token was already recorded
     * @throws SQLException if a statement fails
     * @throws IllegalStateException if the connection is in autocommit
     * @throws IllegalArgumentException for a null, empty or too long resource
     */
    public void check(Connection transaction, String resource, long token) throws SQLException {
        Objects.requireNonNull(transaction, "transaction");
        if (resource == null || resource.isEmpty() || resource.length() > 255) {
            throw new IllegalArgumentException("resource must be 1..255 characters: "
                    + (resource == null ? "null" : resource.length() + " characters"));
        }
        if (transaction.getAutoCommit()) {
            throw new IllegalStateException("FencedWrites.check needs the connection of the writing transaction"
                    + " (autocommit off): in autocommit the guard row is released before the write");
        }
        JdbcDialect dialect = JdbcDialect.ofProduct(transaction.getMetaData().getDatabaseProductName());
        if (dialect == JdbcDialect.POSTGRESQL) {
            try (PreparedStatement ps = transaction.prepareStatement("INSERT INTO " + table + " AS g (resource, token)"
                    + " VALUES (?, ?) ON CONFLICT (resource) DO UPDATE SET token = EXCLUDED.token"
                    + " WHERE g.token <= EXCLUDED.token")) {
                ps.setString(1, resource);
                ps.setLong(2, token);
                if (ps.executeUpdate() != 1) {
                    throw new StaleTokenException(resource, token);
                }
                return;
            }
        }
        // Elsewhere: a conditional update, else read the row under lock, else insert it.
        try (PreparedStatement ps = transaction.prepareStatement(
                "UPDATE " + table + " SET token = ?" + " WHERE resource = ? AND token <= ?")) {
            ps.setLong(1, token);
            ps.setString(2, resource);
            ps.setLong(3, token);
            if (ps.executeUpdate() >= 1) {
                return;
            }
        }
        try (PreparedStatement ps =
                transaction.prepareStatement("SELECT token FROM " + table + " WHERE resource = ? FOR UPDATE")) {
            ps.setString(1, resource);
            try (ResultSet rs = ps.executeQuery()) {
                if (rs.next()) {
                    if (rs.getLong(1) > token) {
                        throw new StaleTokenException(resource, token);
                    }
                    return; // equal (a driver that reports changed rows only said 0)
                }
            }
        }
        try (PreparedStatement ps =
                transaction.prepareStatement("INSERT INTO " + table + " (resource, token)" + " VALUES (?, ?)")) {
            ps.setString(1, resource);
            ps.setLong(2, token);
            ps.executeUpdate();
        }
    }
}
