package io.dlock.benchmarks;

import com.zaxxer.hikari.HikariDataSource;
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
            SqlPool.createSpringLockTable(pool, jdbcUrl);
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
