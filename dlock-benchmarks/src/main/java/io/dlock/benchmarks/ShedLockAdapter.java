package io.dlock.benchmarks;

import com.zaxxer.hikari.HikariDataSource;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.Optional;
import net.javacrumbs.shedlock.core.LockConfiguration;
import net.javacrumbs.shedlock.core.SimpleLock;
import net.javacrumbs.shedlock.provider.jdbc.JdbcLockProvider;

/**
 * ShedLock's plain-JDBC provider ({@code JdbcLockProvider}), defaults (the application's clock
 * decides {@code lock_until}), {@code lockAtMostFor} 30 s and {@code lockAtLeastFor} 0, on a
 * HikariCP pool of 4 connections. ShedLock never waits (a taken lock is an empty result), so it runs
 * in W1 only; a lock still taken after 100 immediate tries there fails the run.
 *
 * <p>Thread-safety: safe from any thread.
 */
final class ShedLockAdapter implements BenchClient {
    private final HikariDataSource pool;
    private final JdbcLockProvider provider;

    ShedLockAdapter(String jdbcUrl) {
        this.pool = SqlPool.open(jdbcUrl, 4, "shedlock");
        try (Connection c = pool.getConnection();
                Statement s = c.createStatement()) {
            s.execute(
                    "CREATE TABLE IF NOT EXISTS shedlock (name VARCHAR(64) NOT NULL, lock_until TIMESTAMP(6) NOT NULL,"
                            + " locked_at TIMESTAMP(6) NOT NULL, locked_by VARCHAR(255) NOT NULL, PRIMARY KEY (name))");
        } catch (SQLException e) {
            pool.close();
            throw new IllegalStateException("cannot create the shedlock table: " + e, e);
        }
        this.provider = new JdbcLockProvider(pool);
    }

    @Override
    public BenchLock lock(String name) {
        return () -> {
            // ShedLock's release writes lock_until = now by the application's clock; a next try within
            // the same clock tick can still find it taken, so a few immediate tries (about 1 ms) are
            // allowed before the run fails.
            for (int i = 0; i < 100; i++) {
                Optional<SimpleLock> lock = provider.lock(
                        new LockConfiguration(Instant.now(), name, Duration.ofSeconds(30), Duration.ZERO));
                if (lock.isPresent()) {
                    return lock.get()::unlock;
                }
                Thread.onSpinWait();
            }
            throw new IllegalStateException("shedlock: lock '" + name + "' is taken (ShedLock never waits)");
        };
    }

    @Override
    public void close() {
        pool.close();
    }
}
