package io.dlock.benchmarks;

import com.zaxxer.hikari.HikariDataSource;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import org.springframework.integration.jdbc.lock.DefaultLockRepository;
import org.springframework.integration.jdbc.lock.JdbcLockRegistry;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;

/**
 * Spring Integration's {@code JdbcLockRegistry} on a {@code DefaultLockRepository}, defaults (a
 * waiter re-tries every 100 ms; a JVM-local {@code ReentrantLock} per key in front), on a HikariCP
 * pool of 10 connections (its default size). The {@code INT_LOCK} table is created from the DDL
 * Spring Integration ships for the database.
 *
 * <p>Thread-safety: safe from any thread; a lock is released by the thread that took it.
 */
final class SpringJdbcLockAdapter implements BenchClient {
    private final HikariDataSource pool;
    private final DefaultLockRepository repository;
    private final JdbcLockRegistry registry;

    SpringJdbcLockAdapter(String jdbcUrl) {
        this.pool = SqlPool.open(jdbcUrl, 10, "spring-jdbc-lock");
        try {
            createTable(SqlPool.mariadb(jdbcUrl) ? "mysql" : "postgresql");
            this.repository = new DefaultLockRepository(pool);
            repository.setTransactionManager(new DataSourceTransactionManager(pool));
            repository.afterPropertiesSet();
            repository.afterSingletonsInstantiated();
            this.registry = new JdbcLockRegistry(repository);
        } catch (RuntimeException e) {
            pool.close();
            throw e;
        }
    }

    private void createTable(String db) {
        String path = "org/springframework/integration/jdbc/schema-" + db + ".sql";
        String ddl;
        try (InputStream in = DefaultLockRepository.class.getClassLoader().getResourceAsStream(path)) {
            if (in == null) {
                throw new IllegalStateException("spring-integration-jdbc has no " + path);
            }
            ddl = new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
        int start = ddl.indexOf("CREATE TABLE INT_LOCK");
        int end = ddl.indexOf(';', start);
        String create =
                ddl.substring(start, end).replace("CREATE TABLE INT_LOCK", "CREATE TABLE IF NOT EXISTS INT_LOCK");
        try (Connection c = pool.getConnection();
                Statement s = c.createStatement()) {
            s.execute(create);
        } catch (SQLException e) {
            if (!String.valueOf(e.getSQLState()).startsWith("23")
                    && !String.valueOf(e.getSQLState()).equals("42P07")) {
                throw new IllegalStateException("cannot create INT_LOCK: " + e, e); // else: a racing worker made it
            }
        }
    }

    @Override
    public BenchLock lock(String name) {
        return BenchLock.of(registry.obtain(name));
    }

    @Override
    public void close() {
        try {
            repository.close();
        } finally {
            pool.close();
        }
    }
}
