package io.dlock.benchmarks;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;

/** The connection pool of the SQL anchors and the SQL floor: HikariCP, as their users run them. */
final class SqlPool {
    private SqlPool() {}

    /**
     * A pool of at most {@code size} connections to {@code jdbcUrl} (credentials in its query).
     *
     * <p>Blocking: until one connection is open. On failure: HikariCP's exception.
     */
    static HikariDataSource open(String jdbcUrl, int size, String name) {
        HikariConfig config = new HikariConfig();
        config.setJdbcUrl(jdbcUrl);
        config.setMaximumPoolSize(size);
        config.setMinimumIdle(1);
        config.setPoolName(name);
        config.setAutoCommit(true);
        return new HikariDataSource(config);
    }

    /** Whether the URL is MariaDB's or MySQL's (else PostgreSQL's). */
    static boolean mariadb(String jdbcUrl) {
        return jdbcUrl.startsWith("jdbc:mariadb:") || jdbcUrl.startsWith("jdbc:mysql:");
    }
}
