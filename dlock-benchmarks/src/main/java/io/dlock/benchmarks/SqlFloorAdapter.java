package io.dlock.benchmarks;

import com.zaxxer.hikari.HikariDataSource;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The least any SQL lease lock does per uncontended cycle: one grant statement that takes the row
 * only if it is free or expired (database clock) and increments a fencing token, then one release
 * statement that frees it only if it is still ours, each an autocommit statement on a connection of
 * the same pool (HikariCP, 4 connections, as dlock-jdbc's default). PostgreSQL: {@code INSERT … ON
 * CONFLICT DO UPDATE … WHERE … RETURNING token}; MariaDB: a conditional {@code UPDATE} whose token
 * comes back through {@code LAST_INSERT_ID(expr)} (the row made once when the lock is first named).
 * No queue, no wake-up, no renewal: W1 only.
 *
 * <p>Thread-safety: safe from any thread (a connection per statement).
 */
final class SqlFloorAdapter implements BenchClient {
    private static final String TABLE = "bench_floor";
    private static final String PG_NOW = "(EXTRACT(EPOCH FROM now()) * 1000)::bigint";
    private static final String MARIADB_NOW =
            "(TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)) DIV 1000)";

    private final HikariDataSource pool;
    private final boolean mariadb;
    private final String grant;
    private final String release;
    private final String clientId = UUID.randomUUID().toString().replace("-", "");
    private final AtomicLong acquisitions = new AtomicLong();

    SqlFloorAdapter(String jdbcUrl) {
        this.mariadb = SqlPool.mariadb(jdbcUrl);
        this.pool = SqlPool.open(jdbcUrl, 4, "sql-floor");
        String now = mariadb ? MARIADB_NOW : PG_NOW;
        if (mariadb) {
            grant = "UPDATE " + TABLE + " SET owner = ?, token = LAST_INSERT_ID(token + 1), expires_ms = " + now
                    + " + 30000 WHERE name = ? AND (owner IS NULL OR expires_ms < " + now + ")";
        } else {
            grant = "INSERT INTO " + TABLE + " AS l (name, owner, token, expires_ms) VALUES (?, ?, 1, " + now
                    + " + 30000) ON CONFLICT (name) DO UPDATE SET owner = EXCLUDED.owner, token = l.token + 1,"
                    + " expires_ms = EXCLUDED.expires_ms WHERE l.owner IS NULL OR l.expires_ms < " + now
                    + " RETURNING l.token";
        }
        release = "UPDATE " + TABLE + " SET owner = NULL, expires_ms = NULL WHERE name = ? AND owner = ?";
        try (Connection c = pool.getConnection();
                Statement s = c.createStatement()) {
            s.execute("CREATE TABLE IF NOT EXISTS " + TABLE + " (name VARCHAR(255) PRIMARY KEY, owner VARCHAR(64),"
                    + " token BIGINT NOT NULL, expires_ms BIGINT)");
        } catch (SQLException e) {
            pool.close();
            throw new IllegalStateException("cannot create " + TABLE + ": " + e, e);
        }
    }

    @Override
    public BenchLock lock(String name) {
        if (mariadb) {
            try (Connection c = pool.getConnection();
                    PreparedStatement ps =
                            c.prepareStatement("INSERT IGNORE INTO " + TABLE + " (name, token) VALUES (?, 0)")) {
                ps.setString(1, name);
                ps.executeUpdate();
            } catch (SQLException e) {
                throw new IllegalStateException(e);
            }
        }
        return () -> {
            String owner = clientId + acquisitions.incrementAndGet();
            if (!grant(name, owner)) {
                throw new IllegalStateException("sql-floor: lock '" + name + "' is taken (the floor never waits)");
            }
            return () -> run(release, name, owner);
        };
    }

    private boolean grant(String name, String owner) {
        try (Connection c = pool.getConnection()) {
            if (mariadb) {
                try (PreparedStatement ps = c.prepareStatement(grant, Statement.RETURN_GENERATED_KEYS)) {
                    ps.setString(1, owner);
                    ps.setString(2, name);
                    if (ps.executeUpdate() != 1) {
                        return false;
                    }
                    try (ResultSet rs = ps.getGeneratedKeys()) {
                        return rs.next() && rs.getLong(1) > 0;
                    }
                }
            }
            try (PreparedStatement ps = c.prepareStatement(grant)) {
                ps.setString(1, name);
                ps.setString(2, owner);
                try (ResultSet rs = ps.executeQuery()) {
                    return rs.next() && rs.getLong(1) > 0;
                }
            }
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
    }

    private void run(String sql, String name, String owner) {
        try (Connection c = pool.getConnection();
                PreparedStatement ps = c.prepareStatement(sql)) {
            ps.setString(1, name);
            ps.setString(2, owner);
            ps.executeUpdate();
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
    }

    @Override
    public void close() {
        pool.close();
    }
}
